"""One parse per text (issue 25, item 5): the located values built from libyaml's events
equal the composer's, shapes only the composer handles still go through it, the bounds
are checked in the same pass, and a parse is shared inside `yamlsrc.sharing()`."""

from __future__ import annotations

from factbook.knowledge.yamlsrc import parse_located, refusal, sharing

# (text, values, {path: line}, [(line, message fragment)]): each shape the events builder
# takes or hands to the composer (anchors, a list as a key, a tagged list)
CASES = [
    (
        "a: 1\nb:\n  - x\n  - {c: 2.5, d: null}\na: 3\n",
        {"a": 3, "b": ["x", {"c": 2.5, "d": None}]},
        {("b", 1): 4, ("b", 1, "d"): 4, ("a",): 5},
        [(5, "duplicate key 'a'")],
    ),
    ("a: &x 1\nb: [2]\n", {"a": 1, "b": [2]}, {("b", 0): 2}, []),
    ("? [k]\n: 1\nb: 2\n", {"b": 2}, {("b",): 3}, [(1, "mapping keys must be scalars")]),
    (
        "x: !!python/object/apply:os.system [ls]\ny: ok\n",
        {"x": None, "y": "ok"},
        {("y",): 2},
        [(1, "could not determine a constructor")],
    ),
    ("t: 2026-12-02\nn: !!int 'no'\n", None, {("n",): 2}, [(2, "invalid value")]),
    ("- a\n- [b, [c]]\n", ["a", ["b", ["c"]]], {(1, 1, 0): 2}, []),
]


def test_located_values_lines_and_problems() -> None:
    for text, values, lines, problems in CASES:
        doc, found = parse_located(text, "f.yaml")
        if values is not None:
            assert doc.data == values, text
        for path, line in lines.items():
            assert doc.line(path) == line, (text, path)
        assert len(found) == len(problems), (text, found)
        for problem, (line, fragment) in zip(found, problems, strict=True):
            assert problem.line == line and fragment in problem.message, (text, problem)
        assert all(p.file == "f.yaml" for p in found)


def test_dates_are_built_by_their_constructor() -> None:
    doc, found = parse_located("t: 2026-12-02\n", "f.yaml")
    assert str(doc.data["t"]) == "2026-12-02" and not found


def test_refusals_come_first_and_name_their_file() -> None:
    deep = "a: " + "[" * 41 + "]" * 41 + "\n"
    for text, fragment in (
        (deep, "nested deeper than"),
        ("a: &x 1\nb: *x\n", "YAML alias '*x'"),
        ("a: 1\n---\nb: 2\n", "more than one YAML document"),
        ("a: [1, 2\nb: 3\n", "YAML syntax error"),
    ):
        for shared in (False, True):
            if shared:
                with sharing():
                    doc, found = parse_located(text, "x.yaml")
                    again = refusal(text, "y.yaml")
                assert again is not None and again.file == "y.yaml" and fragment in again.message
            else:
                doc, found = parse_located(text, "x.yaml")
            assert doc.data is None and len(found) == 1, text
            assert found[0].file == "x.yaml" and fragment in found[0].message, found


def test_sharing_parses_a_text_once() -> None:
    text = "facts:\n  - id: a\n    tags: [x]\n"
    with sharing():
        first, _ = parse_located(text, "one.yaml")
        second, _ = parse_located(text, "two.yaml")
        assert first.data is second.data and (first.file, second.file) == ("one.yaml", "two.yaml")
    third, _ = parse_located(text, "one.yaml")
    assert third.data == first.data and third.data is not first.data


def test_the_inline_bounds_refuse_what_the_event_generator_refuses() -> None:
    """`_located` checks the bounds inline; `refusal` outside `sharing()` runs them on the
    event generator. Cut and spliced texts (syntax errors anywhere, aliases, tags, extra
    documents, nesting at and past the limit) get the same refusal both ways."""
    import random

    from factbook.knowledge.yamlsrc import MAX_DEPTH

    bases = [
        "facts:\n  - id: a.b\n    tags: [x, y]\n    check: {probe: gpu.count, expect: {eq: 8}}\n",
        "a: &x 1\nb: [2, {c: 3}]\n---\nd: 4\n",
        "k: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n",
        "- |\n  text\n- 'q'\n- !!str 5\n- ? x\n  : y\n",
    ]
    pieces = ["", ":", "- ", "[", "]", "&a ", "*a", "!!int ", "\n  ", "'", "---\n", "[[", "{"]
    rng = random.Random(25)
    texts = list(bases)
    for _ in range(600):
        text = rng.choice(bases)
        i, j = sorted((rng.randrange(len(text) + 1), rng.randrange(len(text) + 1)))
        texts.append(text[:i] + rng.choice(pieces) + text[j:])
    for text in texts:
        alone = refusal(text, "f.yaml")
        with sharing():
            inline = refusal(text, "f.yaml")
        assert (alone and (alone.line, alone.message)) == (
            inline and (inline.line, inline.message)
        ), text


def test_a_tagged_scalar_of_nothing_is_a_problem_not_a_crash() -> None:
    """`!!int` with no digits (or `!!bool`, `!!timestamp` of nothing) made PyYAML's
    constructor raise IndexError, KeyError or AttributeError: a traceback from lint."""
    for text, kind in (("k: !!int\n", "int"), ("- !!float ''\n", "float"), ("k: !!bool\n", "bool")):
        for shared in (False, True):
            if shared:
                with sharing():
                    _, found = parse_located(text, "f.yaml")
            else:
                _, found = parse_located(text, "f.yaml")
            assert [(p.line, p.message) for p in found] == [
                (1, f"invalid value: '' is not a valid {kind}")
            ], text
