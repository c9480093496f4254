"""Reports in Korean and Japanese (evalgate.i18n): the catalogs are complete and current, the
check catches what a translator can get wrong, and the language comes from the config or
`--language`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalgate import i18n
from evalgate.i18n import _, n_
from test_inputs import CONFIG, make_project

catalogs = pytest.importorskip("evalgate.locale.catalogs", reason="Babel (the test extra) keeps the catalogs")


def test_every_message_has_a_current_translation_in_every_language():
    problems = catalogs.problems()
    assert problems == [], "\n".join(problems[:40]) + f"\n({len(problems)} problems)"


def _package(tmp_path, source: str):
    package = tmp_path / "pkg"
    (package / "locale").mkdir(parents=True)
    (package / "reports.py").write_text(source, encoding="utf-8")
    return package


def _catalogs(tmp_path, source: str):
    """A package whose only module is `source`, its catalogs made (`catalogs.update`), still
    untranslated: (the package, its locale folder)."""
    package = _package(tmp_path, source)
    catalogs.update(package)
    return package, package / "locale"


def _style_problems(package) -> list[str]:
    """What the check finds, but for the compiled catalogs being stale (the tests fill .po files only)."""
    return [p for p in catalogs.problems(package) if not p.endswith("is stale: run `python -m evalgate.locale.catalogs update`")]


def test_the_check_names_each_kind_of_mistake(tmp_path):
    package, root = _catalogs(tmp_path, 'from evalgate.i18n import _, n_\n_("{suite} regressed", suite=1)\nn_("{n} case broke", "{n} cases broke", 2)\n')
    found = catalogs.problems(package)
    assert "ko: no translation for '{suite} regressed' (reports.py)" in found
    assert any(p.startswith("ja: no translation for ('{n} case broke', '{n} cases broke')") for p in found)

    # A translation that drops or renames a field is caught before a reader sees a KeyError.
    catalogs.fill("ko", {"{suite} regressed": "{스위트} 회귀", "{n} case broke": "케이스 {n}개 깨짐"}, root)
    catalogs.fill("ja", {"{suite} regressed": "{suite} が後退", "{n} case broke": "{n} ケースが壊れた"}, root)
    found = catalogs.problems(package)
    assert found == ["ko: translation of '{suite} regressed' uses fields ['스위트'], the message ['suite']"]
    catalogs.fill("ko", {"{suite} regressed": "{suite} 회귀"}, root)
    assert catalogs.problems(package) == []

    # A new message in the code, and a .po edited without compiling it.
    (package / "reports.py").write_text((package / "reports.py").read_text(encoding="utf-8") + '_("fixed")\n', encoding="utf-8")
    found = catalogs.problems(package)
    assert "evalgate.pot is stale: run `python -m evalgate.locale.catalogs update`" in found
    assert "ko: no entry for 'fixed': run `python -m evalgate.locale.catalogs update`, then translate it" in found
    catalogs.update(package)
    po = catalogs.po_path("ja", root)
    po.write_text(po.read_text(encoding="utf-8").replace("が後退", "が退行"), encoding="utf-8")
    assert "evalgate.mo of ja is stale: run `python -m evalgate.locale.catalogs update`" in catalogs.problems(package)


def test_the_check_catches_a_korean_particle_glued_to_a_field_and_the_fallbacks(tmp_path):
    source = ('from evalgate.i18n import _\n_("{criterion} failed", criterion=1)\n_("no {path}", path=1)\n'
              '_("read from {path}", path=1)\n_("{n} kinds", n=1)\n')
    package, root = _catalogs(tmp_path, source)
    good = {"{criterion} failed": "기준({criterion})을 통과하지 못했습니다", "no {path}": "파일 없음: {path}",
            "read from {path}": "{path}에서 읽었습니다", "{n} kinds": "{n}가지"}
    catalogs.fill("ja", {k: "{" + k.split("{")[1].split("}")[0] + "}" for k in good}, root)
    catalogs.fill("ko", good, root)
    assert catalogs.problems(package) == []  # 에서 does not change with the sound before it; 가지 is a counter

    bad = {"{criterion} failed": "{criterion}을 통과하지 못했습니다", "no {path}": "`{path}`이(가) 없습니다",
           "read from {path}": "{path}(으)로부터 읽었습니다", "{n} kinds": "{n}는 종류"}
    catalogs.fill("ko", bad, root)
    found = _style_problems(package)
    assert found == [
        "ko: a particle glued to a field ('}을') in the translation of '{criterion} failed': "
        "put the field in parentheses after a noun, or after a colon",
        "ko: a particle glued to a field ('}이') in the translation of 'no {path}': put the field in parentheses after a noun, or after a colon",
        "ko: the fallback '(가)' in the translation of 'no {path}': rewrite so one form fits (the field in parentheses after a noun)",
        "ko: the fallback '(으)' in the translation of 'read from {path}': rewrite so one form fits (the field in parentheses after a noun)",
        "ko: a particle glued to a field ('}는') in the translation of '{n} kinds': put the field in parentheses after a noun, or after a colon",
    ]


def test_the_check_catches_a_half_width_semicolon_in_japanese_where_it_is_enforced(tmp_path):
    package, root = _catalogs(tmp_path, 'from evalgate.i18n import _\n_("{a}; {b}", a=1, b=2)\n')
    catalogs.fill("ko", {"{a}; {b}": "{a}. {b}"}, root)
    catalogs.fill("ja", {"{a}; {b}": "{a}; {b}"}, root)
    message = "ja: a half-width ';' in the translation of '{a}; {b}': use 。 or 、"
    assert message in catalogs.problems(package, style=("ko", "ja"))
    assert message not in catalogs.problems(package, style=("ko",))
    catalogs.fill("ja", {"{a}; {b}": "{a}。{b}"}, root)
    assert catalogs.problems(package, style=("ko", "ja")) == []


def test_the_check_catches_half_width_parentheses_around_japanese_and_spaces_beside_full_width_ones(tmp_path):
    source = ('from evalgate.i18n import _\n_("{a} (the last {n} runs)", a=1, n=2)\n_("{status} ({passed} passed)", status=1, passed=2)\n'
              '_("{summary} ({key})", summary=1, key=2)\n')
    package, root = _catalogs(tmp_path, source)
    keys = ["{a} (the last {n} runs)", "{status} ({passed} passed)", "{summary} ({key})"]
    catalogs.fill("ko", {k: k for k in keys}, root)
    # A status line keeps the half-width parentheses after its status token; a field alone in
    # half-width ones is no Japanese text; full-width ones inside a sentence are always right.
    catalogs.fill("ja", {keys[0]: "{a}（直近 {n} 回）", keys[1]: "{status} (合格 {passed})", keys[2]: "{summary} ({key})"}, root)
    assert catalogs.problems(package) == []
    catalogs.fill("ja", {keys[0]: "{a} (直近 {n} 回)", keys[2]: "{summary} （{key}）"}, root)
    found = _style_problems(package)
    assert found == [
        "ja: half-width parentheses around Japanese text ('(直近 {n} 回)') in the translation of '{a} (the last {n} runs)': use （）",
        "ja: a space beside a full-width parenthesis in the translation of '{summary} ({key})': （） need no space",
    ]


@pytest.mark.parametrize("code, names, more, tail", [
    ("en", "set/a, set/b", "set/a, set/b, set/c, set/d, set/e and 2 more", " (flaky on main)"),
    ("ko", "set/a, set/b", "set/a, set/b, set/c, set/d, set/e 외 2개", " (main에서 flaky)"),
    ("ja", "set/a、set/b", "set/a、set/b、set/c、set/d、set/e ほか 2 件", "（main で flaky）"),
])
def test_lists_and_parentheticals_are_written_the_way_each_language_writes_them(code, names, more, tail):
    from evalgate.i18n import name_list

    words = {"en": "flaky on main", "ko": "main에서 flaky", "ja": "main で flaky"}
    with i18n.language(code):
        assert name_list(["set/a", "set/b"]) == names
        assert name_list([f"set/{c}" for c in "abcdefg"]) == more
        assert i18n.aside(words[code]) == tail
        assert i18n.aside("p = 0.004") == " (p = 0.004)"  # ASCII keeps half-width ones, in Japanese too


def test_a_files_unknown_keys_are_listed_in_the_report_language():
    from evalgate.reading import ignored_note

    keys = [f"k{i}" for i in range(7)]
    with i18n.language("ja"):
        assert "'k0'、'k1'、'k2'、'k3'、'k4' ほか 2 件" in ignored_note("a.json", None, keys)
    with i18n.language("ko"):
        assert "'k0', 'k1', 'k2', 'k3', 'k4' 외 2개" in ignored_note("a.json", None, keys)


@pytest.mark.parametrize("code, short, whole, long, hours", [
    ("en", "12.3 s", "9 s", "1 min 5 s", "1 h 3 min"),
    ("ko", "12.3초", "9초", "1분 5초", "1시간 3분"),
    ("ja", "12.3 秒", "9 秒", "1 分 5 秒", "1 時間 3 分"),
])
def test_one_duration_format_in_each_language(code, short, whole, long, hours):
    from evalgate.reports import duration

    with i18n.language(code):
        assert [duration(12.34), duration(9.4, whole=True), duration(65), duration(65.2, whole=True), duration(3790)] == [
            short, whole, long, long, hours]


def test_fields_and_plurals_in_each_language():
    counts = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            counts[code] = (n_("{n} case", "{n} cases", 1), n_("{n} case", "{n} cases", 1204))
    assert counts["en"] == ("1 case", "1,204 cases")
    assert counts["ko"] == ("케이스 1개", "케이스 1,204개")
    assert counts["ja"] == ("ケース 1 件", "ケース 1,204 件")
    assert i18n.current() == "en"  # language() restores the one before it


def test_a_context_separates_one_english_word_with_two_meanings():
    with i18n.language("ja"):
        assert (_("failed"), i18n.p_("agent runs", "failed")) == ("不合格", "失敗")
    assert i18n.p_("agent runs", "failed") == "failed"


def test_an_unknown_language_is_refused():
    with pytest.raises(ValueError, match="unknown report language 'fr'; choose one of en, ko, ja"):
        i18n.use("fr")


def test_the_config_chooses_the_language_and_the_flag_overrides_it(cli, tmp_path):
    root = make_project(tmp_path, config=CONFIG + "report:\n  language: ko\n")
    code, out, _ = cli("run", "--out", "o", "--no-color", cwd=root)
    assert code == 0 and "전체: PASSED (스위트 1개, 케이스 2개: 통과 2, 실패 0, 미평가 0)" in out, out
    code, out, _ = cli("run", "--out", "o", "--no-color", "--language", "ja", cwd=root)
    assert code == 0 and "全体: PASSED (スイート 1 件、ケース 2 件: 合格 2、不合格 0、未評価 0)" in out, out
    code, out, _ = cli("run", "--out", "o", "--no-color", "--language", "en", cwd=root)
    assert code == 0 and "overall: PASSED (2 cases in 1 suite: 2 passed, 0 failed, 0 not evaluated)" in out, out


def test_a_language_evalgate_does_not_have_is_one_clear_error(cli, tmp_path):
    root = make_project(tmp_path, config=CONFIG + "report:\n  language: fr\n")
    code, out, err = cli("validate", cwd=root)
    assert code == 2 and "Traceback" not in err
    assert "report.language" in err and "'en', 'ko' or 'ja'" in err, err


def test_a_missing_catalog_is_an_error_not_english_by_surprise(tmp_path, monkeypatch):
    shutil.copytree(i18n.LOCALE_DIR, tmp_path / "locale")
    (catalogs.mo_path("ja", tmp_path / "locale")).unlink()
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path / "locale")
    monkeypatch.setattr(i18n, "_loaded", {"en": i18n._NULL})
    with pytest.raises(FileNotFoundError):
        i18n.use("ja")
    assert _("overall: {status} ({counts})", status="PASSED", counts="3") == "overall: PASSED (3)"


# --- every call fills exactly the fields its message names -------------------------------

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
_ARG = {"_": (0,), "n_": (0, 1), "p_": (1,)}  # which arguments are messages


def _names(message: str) -> set[str]:
    import string

    return {f.split(".")[0].split("[")[0] for _lit, f, _spec, _conv in string.Formatter().parse(message) if f is not None}


def _mark_tables(tree) -> dict[str, list[str]]:
    """A module's tables of mark()ed labels (`_KIND = {"failed": mark("failed"), ...}`): name -> messages."""
    import ast

    tables = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, (ast.Dict, ast.List, ast.Tuple)):
            marked = [
                c.args[0].value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == "mark" and isinstance(c.args[0], ast.Constant)
            ]
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and marked:
                    tables[t.id] = marked
    return tables


def _python_calls():
    """(where, function, messages or None when not literal, the message expression, keyword names, **fields given)."""
    import ast

    for path in sorted([*(ROOT / "evalgate").rglob("*.py"), *(ROOT / "entrypoint").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tables = _mark_tables(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ARG):
                continue
            if path.name == "markdown.py" and any(isinstance(a, ast.Name) for a in node.args[:1]) and node.args and node.args[0].id in ("message", "singular", "context"):
                continue  # the template environment's wrappers
            kw = {k.arg for k in node.keywords if k.arg is not None}
            star = any(k.arg is None for k in node.keywords)
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            for i in _ARG[node.func.id]:
                arg = node.args[i]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    messages = [arg.value]
                elif isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name) and arg.value.id in tables:
                    messages = tables[arg.value.id]
                else:
                    messages = None
                yield where, node.func.id, messages, ast.unparse(arg), kw, star


def test_every_call_fills_exactly_the_fields_its_message_names():
    """`_("{n} cases broke", n=3)`: a field the message names but the call does not give is a
    KeyError in the one branch that says it; a field given but not named is a mistake too.
    `n_` gives `{n}` itself (a call must not give it again)."""
    wrong = []
    for where, fn, messages, _expr, kw, star in _python_calls():
        if messages is None or star:
            continue
        if fn == "n_" and "n" in kw:
            wrong.append(f"{where}: n_ gives {{n}} itself")
        for m in messages:
            need = _names(m) - ({"n"} if fn == "n_" else set())
            if need != kw:
                wrong.append(f"{where}: {m[:60]!r} names {sorted(need)}, the call gives {sorted(kw)}")
    assert not wrong, "\n".join(wrong)


def test_a_message_is_never_text_made_at_run_time_when_it_has_fields():
    """str.format runs on the message (our catalog's text), never on text that could hold a
    case id, an agent's words or a reason: a call that fills fields takes a literal message or
    a label of a mark() table. (`_(text)` without fields only looks the text up.)"""
    dynamic = [f"{where}: {fn}({expr}, {', '.join(sorted(kw))})" for where, fn, messages, expr, kw, star in _python_calls() if messages is None and (kw or star or fn == "n_")]
    assert not dynamic, "\n".join(dynamic)


def test_every_template_message_is_filled_with_its_fields():
    """The same in the Jinja templates: `_()`/`n_()`/`p_()` give the fields their message
    names, or leave all of them to the `fields` filter (report.html), which gives them all."""
    import jinja2
    import jinja2.nodes as nodes

    env = jinja2.Environment()
    wrong = []
    for path in sorted((ROOT / "evalgate" / "templates").glob("*.j2")):
        tree = env.parse(path.read_text(encoding="utf-8"))
        by_filter = {}
        for f in tree.find_all(nodes.Filter):
            if f.name == "fields" and isinstance(f.node, nodes.Call):
                by_filter[id(f.node)] = {k.key for k in f.kwargs}
        for call in tree.find_all(nodes.Call):
            if not (isinstance(call.node, nodes.Name) and call.node.name in _ARG):
                continue
            fn = call.node.name
            given = {k.key for k in call.kwargs} | by_filter.get(id(call), set())
            for i in _ARG[fn]:
                arg = call.args[i]
                if not isinstance(arg, nodes.Const):
                    wrong.append(f"{path.name}:{call.lineno}: a message made at run time")
                    continue
                need = _names(arg.value) - ({"n"} if fn == "n_" else set())
                if need != given:
                    wrong.append(f"{path.name}:{call.lineno}: {arg.value[:60]!r} names {sorted(need)}, given {sorted(given)}")
    assert not wrong, "\n".join(wrong)


def test_a_plural_message_names_the_same_fields_in_both_forms():
    """`n_("{n} case ({broken} broken)", "{n} cases")` would drop a field for every count but
    one: both forms name the same fields (`{n}` may be left out of the singular: "one case")."""
    from babel.messages.pofile import read_po

    with open(ROOT / "evalgate" / "locale" / "evalgate.pot", encoding="utf-8") as f:
        catalog = read_po(f)
    wrong = [m.id for m in catalog if isinstance(m.id, tuple) and _names(m.id[0]) - {"n"} != _names(m.id[1]) - {"n"}]
    assert not wrong, wrong


@pytest.mark.parametrize("code", ["ko", "ja"])
def test_empty_text_stays_empty(code):
    """`_(text)` of text made at run time (an agent's error, a hint) may be empty: gettext maps
    "" to the catalog's header (Project-Id-Version, ...), which no report must show."""
    with i18n.language(code):
        assert _("") == ""
        assert i18n.p_("agent runs", "") == ""


def test_no_function_binds_the_name_of_the_translation_function():
    """A function that calls `_()` and also binds `_` itself (`for _, x in ...`, `_ = ...`)
    makes `_` local to the whole function: every `_()` in it raises UnboundLocalError before
    that line, on whichever path reaches it first (a case without answers judged side by side
    did, in evalgate.pairwise.judge_suite). Comprehensions and nested functions have scopes of
    their own and may use `_` freely."""
    import ast

    root = Path(__file__).resolve().parent.parent
    scoped = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

    def binds(node: ast.AST) -> list[int]:
        out = []
        for child in ast.iter_child_nodes(node):
            if isinstance(child, scoped):
                continue
            if isinstance(child, ast.Name) and child.id == "_" and isinstance(child.ctx, ast.Store):
                out.append(child.lineno)
            out += binds(child)
        return out

    found = []
    for path in sorted([*root.glob("evalgate/**/*.py"), *root.glob("entrypoint/**/*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                calls = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "_" for n in ast.walk(fn))
                lines = binds(fn)
                if calls and lines:
                    found.append(f"{path.relative_to(root)}:{lines[0]} ({fn.name})")
    assert not found, "binds `_`, which shadows the translation function it calls: " + ", ".join(found)
