"""Helpers for the Markdown tests: store snapshots, the CLI, windows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cwcore.index import derived
from cwcore.store.rocks import FAMILIES, Store
from cwtui.cli import app

runner = CliRunner()

# Real Chinese sentences (written for these tests), one topic each.
CHINESE = [
    "今天早上我们讨论了数据库的压缩策略，决定在后台线程中执行。",
    "搜索引擎使用二元分词来处理中文文本，这样短语也能被找到。",
    "如果用户输入的查询只有一个汉字，系统会返回包含该字的段落。",
    "每个文档的版本号在内容改变时递增，旧版本仍然可以审计。",
    "锁文件保证两个导入进程不会同时准备同一个文件夹。",
    "北京的秋天天气晴朗，适合在公园里散步和骑自行车。",
    "她在图书馆借了三本关于历史和哲学的书，下周归还。",
    "这个函数的返回值是一个列表，列表里每一项都是字典。",
    "测试必须覆盖换行符为回车加换行的情况，偏移量要精确。",
    "厨房里的冰箱坏了，牛奶和鸡蛋都需要尽快吃掉。",
    "我们把配置文件放在用户目录下，环境变量可以覆盖它。",
    "长江是中国最长的河流，流经许多重要的城市。",
    "服务器重启以后，索引会从发件箱里继续处理未完成的任务。",
    "孩子们在操场上踢足球，老师在旁边吹哨子。",
    "请不要在日志里记录密码或者访问令牌，它们会被自动删除。",
    "音乐会在晚上八点开始，门票已经全部卖完了。",
    "向量检索暂时没有启用，词法检索仍然可以正常工作。",
    "山上的寺庙很安静，只能听到风声和鸟叫。",
    "标题路径记录了每个章节在文档中的层级位置。",
    "这家餐馆的饺子非常好吃，尤其是韭菜猪肉馅的。",
]


def key_counts(store: Store) -> dict[str, int]:
    return {f: sum(1 for _ in store.scan(f, b"")) for f in FAMILIES}


def cli(*args: str) -> tuple[int, Any, str]:
    """Run ``cw`` in-process; returns (exit code, the last JSON line or stdout, stderr)."""
    result = runner.invoke(app, list(args))
    rows = [json.loads(x) for x in result.stdout.splitlines() if x.strip().startswith("{")]
    return result.exit_code, (rows[-1] if rows else result.stdout), result.stderr


def windows_of(store: Store, ordinal: int) -> list[dict[str, Any]]:
    mark = derived.marker(store, ordinal)
    assert mark is not None, "document not indexed"
    first = int(mark["firstWid"])
    records = derived.window_records(store, list(range(first, first + int(mark["windows"]))))
    assert all(r is not None for r in records)
    return [r for r in records if r is not None]


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path
