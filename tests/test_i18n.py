"""Reports in Korean and Japanese (evalgate.i18n): the catalogs are complete and current, the
check catches what a translator can get wrong, and the language comes from the config or
`--language`."""

from __future__ import annotations

import shutil

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


def test_the_check_names_each_kind_of_mistake(tmp_path):
    package = _package(tmp_path, 'from evalgate.i18n import _, n_\n_("{suite} regressed", suite=1)\nn_("{n} case broke", "{n} cases broke", 2)\n')
    catalogs.update(package)
    root = package / "locale"
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


def test_fields_and_plurals_in_each_language():
    counts = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            counts[code] = (n_("{n} case", "{n} cases", 1), n_("{n} case", "{n} cases", 1204))
    assert counts["en"] == ("1 case", "1,204 cases")
    assert counts["ko"] == ("케이스 1개", "케이스 1,204개")
    assert counts["ja"] == ("1 ケース", "1,204 ケース")
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
    assert code == 0 and "전체: PASSED (스위트 1개의 케이스 2개: 통과 2, 실패 0, 평가 안 됨 0)" in out, out
    code, out, _ = cli("run", "--out", "o", "--no-color", "--language", "ja", cwd=root)
    assert code == 0 and "全体: PASSED (1 スイート、2 ケース: 合格 2、不合格 0、未評価 0)" in out, out
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
