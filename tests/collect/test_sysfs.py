from pathlib import Path

from hwinfo.collect.sysfs import Root, is_live


def test_is_live(tmp_path: Path) -> None:
    assert is_live(Root("/"))
    assert not is_live(Root(tmp_path))


def test_missing_and_malformed_files_read_as_none(tmp_path: Path) -> None:
    (tmp_path / "size").write_text("  \n")
    (tmp_path / "count").write_text("twelve\n")
    root = Root(tmp_path)
    assert root.read_value("size") is None and root.read_int("count") is None
    assert root.read_text("nope") is None and root.listdir("nope") == []
