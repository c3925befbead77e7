"""bench.report: the generated tables are rewritten from bench/results, and a stale one is named."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.common import Generated, block, markers, replace_section, stale, write
from bench.report import generated, main

README = "# Benchmarks\n\n## Demo\n\nProse above.\n\n{block}\n\nProse below.\n"


def demo(figure: str = "42") -> Generated:
    table = f"\n| figure | value |\n|---|---|\n| pods/s | {figure} |\n"
    return Generated("demo", "python -m bench.demo",
                     {"demo": block("demo", "python -m bench.demo", table)},
                     f"# Demo: results\n\nEvery figure: {figure}.\n")


def files(tmp_path: Path, text: str) -> tuple[Path, Path]:
    readme, docs = tmp_path / "README.md", tmp_path / "docs"
    readme.write_text(text)
    return readme, docs


def test_a_block_is_replaced_in_place() -> None:
    begin, end = markers("e2e", "python -m bench.e2e")
    readme = f"# B\n\n## End-to-end\n\n{begin}\nold\n{end}\n\n## Next\n"
    new = replace_section(readme, f"{begin}\nnew\n{end}", begin, end)
    assert "old" not in new and "new" in new
    assert new.startswith("# B\n") and new.endswith("## Next\n")


def test_a_fresh_table_passes(tmp_path: Path) -> None:
    begin, end = markers("demo", "python -m bench.demo")
    readme, docs = files(tmp_path, README.format(block=f"{begin}\nold\n{end}"))
    assert write([demo()], readme, docs) == [readme, docs / "demo-results.md"]
    assert stale([demo()], readme, docs) == []
    assert write([demo()], readme, docs) == []  # nothing left to rewrite
    text = readme.read_text()
    assert text.startswith("# Benchmarks\n\n## Demo\n\nProse above.\n\n" + begin)
    assert text.endswith(end + "\n\nProse below.\n") and "| pods/s | 42 |" in text


def test_a_stale_table_is_named_with_its_first_wrong_line(tmp_path: Path) -> None:
    readme, docs = files(tmp_path, README.format(block=demo("0").blocks["demo"]))
    write([demo("41")], readme, docs)
    problems = stale([demo("42")], readme, docs)
    assert len(problems) == 2
    assert problems[0] == (f"{readme}:10: generated block 'demo-results' is stale: it reads "
                           "'| pods/s | 41 |', bench/results gives '| pods/s | 42 |'")
    assert readme.read_text().splitlines()[9] == "| pods/s | 41 |"
    assert problems[1].startswith(f"{docs / 'demo-results.md'}:3: stale: it reads 'Every")


def test_a_missing_block_or_page_and_a_block_nobody_renders_are_reported(
        tmp_path: Path) -> None:
    orphan = block("gone", "python -m bench.gone", "\nold figures\n")
    readme, docs = files(tmp_path, README.format(block=orphan))
    problems = stale([demo()], readme, docs)
    assert "generated block 'demo-results' is missing" in problems[0]
    assert "demo-results.md: missing" in problems[1]
    assert "generated block 'gone-results' has no generator" in problems[2]
    assert len(stale([demo()], readme, docs, complete=False)) == 2


def test_every_benchmark_renders_from_bench_results(tmp_path: Path) -> None:
    """The real generators: written once, fresh; one figure changed in the README, named."""
    readme, docs = files(tmp_path, "# Benchmarks\n")
    texts = generated()
    assert {t.name for t in texts} == {"core", "packing", "sim", "sim-time", "e2e", "chaos",
                                       "dra-e2e", "core-12500", "fair-share"}
    write(texts, readme, docs)
    assert stale(texts, readme, docs) == []
    text = readme.read_text()
    sim = text.index(markers("sim", "python -m bench.sim")[0])
    cell = text.index("| phalanx |", sim)
    readme.write_text(text[:cell] + "| phalanx | 99 ±" + text[cell + len("| phalanx |"):])
    problems = stale(texts, readme, docs)
    assert len(problems) == 1 and "'sim-results' is stale" in problems[0]


def test_check_exits_1_and_names_the_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import bench.common

    readme, docs = files(tmp_path, "# Benchmarks\n")
    monkeypatch.setattr(bench.common, "README", readme)
    monkeypatch.setattr(bench.common, "DOCS", docs)
    assert main(["--check", "--only", "chaos"]) == 1
    assert "generated block 'chaos-results' is missing" in capsys.readouterr().err
    assert main(["--only", "chaos"]) == 0
    assert main(["--check", "--only", "chaos"]) == 0
