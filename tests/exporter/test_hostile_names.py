"""Names a user chose reach Prometheus intact: promtool accepts the text format, and a real
Prometheus (which asks for OpenMetrics first) scrapes the series and gives the names back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import require_tool

from hwinfo import sim
from tests.deploy.prometheus_stack import prometheus_scraping

from .serving import get, serving

# (the user a process runs as, the label value Prometheus must give back, written by hand).
USERS = [
    ('a"b\\c', 'a"b\\c'),  # the exposition's own escapes
    ("two\nlines\r", "two\nlines\r"),
    ("</script><script>alert(1)</script>", "</script><script>alert(1)</script>"),
    ("evil\u202egnp.exe", "evil\u202egnp.exe"),  # bidi: a label keeps it, a page escapes it
    ("caf\udce9", "caf\\xe9"),  # an undecodable byte of a Latin-1 name: no UTF-8 encodes it
    ("x" * 256, "x" * 256),  # the longest user name a scenario takes
]


def test_hostile_user_names_pass_promtool_and_a_real_prometheus(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    scenario = json.loads((Path(sim.__file__).parent / "scenarios" / "cloud-t4.json").read_text())
    scenario["gpus"][0]["processes"] = [
        {"pid": 4000 + n, "used_memory_mib": 100 + n, "user": user, "command": f"{user} --x"}
        for n, (user, _) in enumerate(USERS)
    ]
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(scenario))  # lone surrogates as \udce9 escapes
    with serving("--simulate", str(path), "--process-metrics") as url:
        text = get(url + "/metrics")[2]
        checked = subprocess.run([promtool, "check", "metrics"], input=text,
                                 capture_output=True, check=False)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        with prometheus_scraping(url, tmp_path / "prometheus", rule_files=()) as stack, \
                stack.logs_on_failure():
            stack.wait_until_scraped()
            series = stack.query("hwinfo_gpu_user_memory_used_bytes")
    assert sorted(s["metric"]["user"] for s in series) == sorted(label for _, label in USERS)
