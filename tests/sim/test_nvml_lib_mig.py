"""MIG through the real pynvml on the simulator: a real H100's MIG layout field by field, and
every MIG board reconfigured the way a pynvml client (nvidia-smi mig, mig-parted) does it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pynvml as N
import pytest
from conftest import CAPTURES, TEXT_CAPTURES, require_captures

import hwinfo.sim
from hwinfo.mig.profiles import default_gpu_instance_id
from hwinfo.sim import Machine, nvml_lib_mig
from hwinfo.sim.boards import BOARDS
from hwinfo.sim.nvml_symbols import exported
from hwinfo.sim.scenario import parse_scenario

# https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-h100-mig__590.48.01.txt
H100_MIG = CAPTURES / "text" / "linux-x86_64__nvidia-h100-mig__590.48.01.txt"
MIB = 1 << 20
# NVML_COMPUTE_INSTANCE_PROFILE_* of a compute instance of N slices.
CI_PROFILE_INDEX = {1: 0x0, 2: 0x1, 3: 0x2, 4: 0x3, 7: 0x4}
MIG_BOARDS = sorted(key for key, board in BOARDS.items() if board.mig is not None)


@pytest.fixture
def simulate() -> Iterator[Any]:
    installed = 0

    def make(data: dict[str, Any]) -> Machine:
        nonlocal installed
        machine = hwinfo.sim.install(parse_scenario({"format": 1, **data}, "t.json", "t"))
        installed += 1
        N.nvmlInit()
        return machine

    yield make
    for _ in range(installed):
        hwinfo.sim.uninstall()


def _section(text: str, command: str) -> str:
    """The output of the first `# $ <command>` section of a capture file."""
    head = text.index(f"# $ {command}\n")
    body = text[text.index("\n#####", head) + 1 :]
    body = body[body.index("\n") + 1 :]
    return body[: body.find("\n#####")]


def _capture_mig_devices(text: str) -> tuple[str, str, list[dict[str, Any]]]:
    """(GPU name, driver version, MIG devices) as the capture's `-L` and `-q` show them."""
    listing = _section(text, "nvidia-smi -L")
    name = re.search(r"^GPU 0: (.+?) \(UUID", listing, re.MULTILINE).group(1)  # type: ignore[union-attr]
    profiles = {
        int(index): profile
        for profile, index in re.findall(r"^\s+MIG (\S+)\s+Device\s+(\d+):", listing, re.MULTILINE)
    }
    query = _section(text, "nvidia-smi -q")
    driver = re.search(r"^Driver Version\s+: (\S+)", query, re.MULTILINE).group(1)  # type: ignore[union-attr]
    devices = []
    for block in query.split("    MIG Device\n")[1:]:
        block = block.split("\n    MIG Device", 1)[0]

        def value(label: str, text: str = block) -> int:
            return int(re.search(rf"^\s+{label}\s+: (\d+)", text, re.MULTILINE).group(1))  # type: ignore[union-attr]

        fb = block.split("Shared FB Memory Usage", 1)[1]
        index = value("Index")
        devices.append(
            {
                "index": index,
                "profile": profiles[index],
                "gi": value("GPU Instance ID"),
                "ci": value("Compute Instance ID"),
                "sm": value("Multiprocessor count"),
                "ce": value("Copy Engine count"),
                "enc": value("Encoder count"),
                "dec": value("Decoder count"),
                "ofa": value("OFA count"),
                "jpg": value("JPG count"),
                "memory_mib": value("Total", fb),
                "bar1_mib": value("Total", block.split("Shared BAR1 Memory", 1)[1]),
            }
        )
    return name, driver, devices


def test_h200_mig_bar1_as_driver_590_reports_it(simulate: Any) -> None:
    """A real H200 on driver 590: 3g.71gb 59237, 2g.35gb 29618, 1g.18gb 14809 MiB.

    https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/e656cd8/internal/captures/linux-x86_64__nvidia-h200-mig__590.48.01.txt
    """
    instances = [{"profile": p} for p in ("3g.71gb", "2g.35gb", "1g.18gb")]
    simulate(
        {
            "driver": {"version": "590.48.01"},
            "gpus": [{"board": "H200-SXM-141GB", "mig": {"enabled": True, "gpu_instances": instances}}],
        }
    )
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    seen = {}
    for i in range(3):
        mig = N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, i)
        profile = N.nvmlDeviceGetName(mig).rsplit(" ", 1)[1]
        seen[profile] = N.nvmlDeviceGetBAR1MemoryInfo(mig).bar1Total // MIB
    assert seen == {"3g.71gb": 59237, "2g.35gb": 29618, "1g.18gb": 14809}


def test_a30_mig_bar1_as_a_real_535_session_reports_it(simulate: Any) -> None:
    """A real A30 under 535.183.01: 2g.12gb 16383 and 1g.6gb 8191 MiB of BAR1, not the
    A100's twice that."""
    instances = [{"profile": "2g.12gb"}, {"profile": "1g.6gb"}, {"profile": "1g.6gb"}]
    simulate(
        {
            "driver": {"version": "535.183.01"},
            "gpus": [{"board": "A30", "mig": {"enabled": True, "gpu_instances": instances}}],
        }
    )
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    seen = set()
    for i in range(3):
        mig = N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, i)
        profile = N.nvmlDeviceGetName(mig).rsplit(" ", 1)[1]
        seen.add((profile, N.nvmlDeviceGetBAR1MemoryInfo(mig).bar1Total // MIB))
    assert seen == {("2g.12gb", 16383), ("1g.6gb", 8191)}


def test_h200_profiles_of_equal_memory_slices_have_equal_memory(simulate: Any) -> None:
    """Every real `-lgip` listing gives profiles of the same memory slices the same memory
    (mig-parted #120's H200: 1g.35gb and 2g.35gb 33024, 3g.71gb and 4g.71gb 71168 MiB), so
    the 256 MiB more a real H200 on 590 shows for 2g.35gb and 3g.71gb holds for their
    twins too; before 590 all four are the R550 listing's."""
    for driver, two, four in (("590.48.01", 33280, 71424), ("560.35.03", 33024, 71168)):
        simulate({"driver": {"version": driver},
                  "gpus": [{"board": "H200-SXM-141GB", "mig": {"enabled": True}}]})
        gpu = N.nvmlDeviceGetHandleByIndex(0)
        sizes = {}
        for index in range(N.NVML_GPU_INSTANCE_PROFILE_COUNT):
            try:
                info = N.nvmlDeviceGetGpuInstanceProfileInfo(gpu, index)
            except N.NVMLError_NotSupported:
                continue
            sizes[info.name.removeprefix("MIG ")] = info.memorySizeMB
        assert (sizes["1g.35gb"], sizes["2g.35gb"]) == (two, two)
        assert (sizes["3g.71gb"], sizes["4g.71gb"]) == (four, four)


def test_h100_capture_mig_layout_field_by_field(simulate: Any) -> None:
    require_captures(H100_MIG)
    name, driver, devices = _capture_mig_devices(H100_MIG.read_text(encoding="utf-8"))
    assert len(devices) == 4 and driver == "590.48.01"
    (board,) = [k for k, b in BOARDS.items() if b.defaults.get("name") == name]
    table = BOARDS[board].mig
    assert table is not None
    instances = []
    for dev in devices:
        profile = table.by_name[dev["profile"]]
        # The capture gives GI ids; its placement is the one NVML numbers with that id.
        (start,) = [
            st
            for st in profile.placement_starts
            if default_gpu_instance_id(st, profile.memory_slices) == dev["gi"]
        ]
        instances.append({"profile": dev["profile"], "id": dev["gi"], "start": start})
    simulate(
        {
            "driver": {"version": driver},
            "gpus": [{"board": board, "mig": {"enabled": True, "gpu_instances": instances}}],
        }
    )
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    assert N.nvmlDeviceGetName(gpu) == name
    for dev in devices:
        mig = N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, dev["index"])
        assert N.nvmlDeviceGetName(mig) == f"{name} MIG {dev['profile']}"
        assert N.nvmlDeviceGetGpuInstanceId(mig) == dev["gi"]
        assert N.nvmlDeviceGetComputeInstanceId(mig) == dev["ci"]
        attrs = N.nvmlDeviceGetAttributes(mig)
        seen = (
            attrs.multiprocessorCount,
            attrs.sharedCopyEngineCount,
            attrs.sharedEncoderCount,
            attrs.sharedDecoderCount,
            attrs.sharedOfaCount,
            attrs.sharedJpegCount,
            attrs.memorySizeMB,
        )
        want = tuple(dev[k] for k in ("sm", "ce", "enc", "dec", "ofa", "jpg", "memory_mib"))
        assert seen == want
        assert N.nvmlDeviceGetMemoryInfo(mig).total == dev["memory_mib"] * MIB
        assert N.nvmlDeviceGetBAR1MemoryInfo(mig).bar1Total // MIB == dev["bar1_mib"]
        # The GPU instance's profile, as `nvidia-smi mig -lgip` would list it.
        gi = N.nvmlDeviceGetGpuInstanceById(gpu, dev["gi"])
        info = N.nvmlGpuInstanceGetInfo(gi)
        profile = table.by_name[dev["profile"]]
        by_index = N.nvmlDeviceGetGpuInstanceProfileInfo(gpu, profile.index)
        by_id = N.nvmlDeviceGetGpuInstanceProfileInfoById(gpu, info.profileId)
        for p in (by_index, by_id):
            assert p.id == info.profileId == profile.id
            assert p.name == f"MIG {dev['profile']}"
            listed = (
                p.multiprocessorCount,
                p.copyEngineCount,
                p.encoderCount,
                p.decoderCount,
                p.ofaCount,
                p.jpegCount,
                p.memorySizeMB,
            )
            assert listed == want
        # Its placement is one `-lgipp` lists, and the whole-GI compute instance (`-lcip`)
        # has the device's SMs.
        count = N.c_uint()
        N.nvmlDeviceGetGpuInstancePossiblePlacements(gpu, info.profileId, None, N.byref(count))
        slots = (N.c_nvmlGpuInstancePlacement_t * count.value)()
        N.nvmlDeviceGetGpuInstancePossiblePlacements(gpu, info.profileId, slots, N.byref(count))
        assert (info.placement.start, info.placement.size) in [(s.start, s.size) for s in slots]
        whole = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gi, CI_PROFILE_INDEX[profile.slice_count], 0
        )
        assert whole.multiprocessorCount == dev["sm"]


def _profile_info(gpu: Any, index: int) -> Any:
    return N.nvmlDeviceGetGpuInstanceProfileInfo(gpu, index)


def _supported(gpu: Any, index: int) -> Any:
    """The profile at this NVML_GPU_INSTANCE_PROFILE_* index, or None where the board has none."""
    try:
        return _profile_info(gpu, index)
    except N.NVMLError_NotSupported:
        return None


def _mig_count(gpu: Any) -> int:
    count = 0
    for i in range(N.nvmlDeviceGetMaxMigDeviceCount(gpu)):
        try:
            N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, i)
        except N.NVMLError_NotFound:
            break
        count += 1
    return count


@pytest.mark.parametrize("board", MIG_BOARDS)
def test_reconfigure_every_mig_board_through_pynvml(simulate: Any, board: str) -> None:
    table = BOARDS[board].mig
    assert table is not None
    slices = table.max_gpu_instances
    simulate(
        {
            "driver": {"version": "590.48.01"},
            "gpus": [{"board": board, "mig": {"enabled": True}}],
        }
    )
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    assert N.nvmlDeviceGetMaxMigDeviceCount(gpu) == slices and _mig_count(gpu) == 0

    # As many 1-slice GPU instances as the board has slices, one compute instance each
    # (RTX PRO 5000 allows one plain 1g; media-less ones fill the rest).
    one = _profile_info(gpu, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE)
    gis = [N.nvmlDeviceCreateGpuInstance(gpu, one.id) for _ in range(one.instanceCount)]
    if len(gis) < slices:
        no_me = _profile_info(gpu, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME)
        while N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, no_me.id):
            gis.append(N.nvmlDeviceCreateGpuInstance(gpu, no_me.id))
    assert len(gis) == slices
    with pytest.raises(N.NVMLError_InsufficientResources):
        N.nvmlDeviceCreateGpuInstance(gpu, one.id)
    assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, one.id) == 0
    cis = [
        N.nvmlGpuInstanceCreateComputeInstance(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)
        for gi in gis
    ]
    assert _mig_count(gpu) == slices
    ids = sorted(N.nvmlGpuInstanceGetInfo(gi).id for gi in gis)
    assert ids == [default_gpu_instance_id(st, 1, table.memory_slices) for st in range(slices)]
    mig0 = N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 0)
    assert N.nvmlDeviceGetAttributes(mig0).multiprocessorCount == one.multiprocessorCount
    with pytest.raises(N.NVMLError_InUse):
        N.nvmlGpuInstanceDestroy(gis[0])  # it still has a compute instance
    for ci in cis:
        N.nvmlComputeInstanceDestroy(ci)
    for gi in gis:
        N.nvmlGpuInstanceDestroy(gi)
    assert _mig_count(gpu) == 0
    with pytest.raises(N.NVMLError_InvalidArgument):
        N.nvmlGpuInstanceGetInfo(gis[0])  # a destroyed instance's handle is stale

    # The whole GPU as one instance, split into as many 1-slice compute instances as fit.
    whole_gpu = {
        7: N.NVML_GPU_INSTANCE_PROFILE_7_SLICE,
        4: N.NVML_GPU_INSTANCE_PROFILE_4_SLICE,
        2: N.NVML_GPU_INSTANCE_PROFILE_2_SLICE,
    }
    full = _profile_info(gpu, whole_gpu[slices])
    whole = N.nvmlDeviceCreateGpuInstance(gpu, full.id)
    assert N.nvmlGpuInstanceGetInfo(whole).id == 0
    ci_one = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(
        whole, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 0
    )
    assert ci_one.instanceCount == slices
    cis = [
        N.nvmlGpuInstanceCreateComputeInstance(whole, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)
        for _ in range(ci_one.instanceCount)
    ]
    with pytest.raises(N.NVMLError_InsufficientResources):
        N.nvmlGpuInstanceCreateComputeInstance(whole, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)
    assert sorted(N.nvmlComputeInstanceGetInfo(ci).id for ci in cis) == list(range(slices))
    assert _mig_count(gpu) == slices
    sms = [
        N.nvmlDeviceGetAttributes(N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, i))
        for i in range(slices)
    ]
    assert {a.multiprocessorCount for a in sms} == {ci_one.multiprocessorCount}
    assert sum(a.multiprocessorCount for a in sms) <= full.multiprocessorCount
    assert {a.memorySizeMB for a in sms} == {full.memorySizeMB}  # CIs share the GI's memory
    for ci in cis:
        N.nvmlComputeInstanceDestroy(ci)
    N.nvmlGpuInstanceDestroy(whole)

    # A mixed layout placed explicitly: a half-GPU instance in the upper half, then the rest
    # in smaller ones, as the H100 capture's 3g + 2g + 1g + 1g (on 4-slice boards 2g + 1g + 1g,
    # on 2-slice ones 1g + 1g; media-less variants where the board has no plain one, or no
    # more of it).
    def plain_or_no_me(plain: int, no_me: int, taken: int) -> Any:
        info = _supported(gpu, plain)
        if info is not None and taken < info.instanceCount:
            return info
        return _profile_info(gpu, no_me)

    upper = table.memory_slices // 2
    if slices == 7:
        placed = [(_profile_info(gpu, N.NVML_GPU_INSTANCE_PROFILE_3_SLICE).id, upper, upper)]
        placed += [(_profile_info(gpu, N.NVML_GPU_INSTANCE_PROFILE_2_SLICE).id, 0, 2)]
        ones = range(2, upper)
    else:
        half = plain_or_no_me(
            *(
                (N.NVML_GPU_INSTANCE_PROFILE_2_SLICE, N.NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME)
                if slices == 4
                else (N.NVML_GPU_INSTANCE_PROFILE_1_SLICE, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME)
            ),
            0,
        )
        placed = [(half.id, upper, upper)]
        ones = range(upper)
    for n, start in enumerate(ones):
        profile = plain_or_no_me(
            N.NVML_GPU_INSTANCE_PROFILE_1_SLICE, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, n
        )
        placed.append((profile.id, start, 1))
    for pid, start, size in placed:
        where = N.c_nvmlGpuInstancePlacement_t(start, size)
        gi = N.nvmlDeviceCreateGpuInstanceWithPlacement(gpu, pid, N.byref(where))
        info = N.nvmlGpuInstanceGetInfo(gi)
        assert (info.profileId, info.placement.start, info.placement.size) == (pid, start, size)
        N.nvmlGpuInstanceCreateComputeInstance(gi, N.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)
    assert _mig_count(gpu) == len(placed)
    for pid in {pid for pid, _, _ in placed}:
        assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, pid) == 0
    # MIG device indices follow ascending GPU-instance ids.
    gi_ids = [
        N.nvmlDeviceGetGpuInstanceId(N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, i))
        for i in range(len(placed))
    ]
    assert gi_ids == sorted(gi_ids)


def test_create_needs_privileges_and_mig_on(simulate: Any) -> None:
    simulate(
        {
            "privileged": False,
            "driver": {"version": "590.48.01"},
            "gpus": [
                {"board": "B200", "mig": {"enabled": True}},
                {"board": "B200", "mig": {"enabled": False}},
            ],
        }
    )
    on, off = N.nvmlDeviceGetHandleByIndex(0), N.nvmlDeviceGetHandleByIndex(1)
    one = _profile_info(on, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE)
    with pytest.raises(N.NVMLError_NoPermission):
        N.nvmlDeviceCreateGpuInstance(on, one.id)
    with pytest.raises(N.NVMLError_NotSupported):
        N.nvmlDeviceCreateGpuInstance(off, one.id)


def test_second_media_instance_is_refused(simulate: Any) -> None:
    simulate(
        {"driver": {"version": "590.48.01"}, "gpus": [{"board": "A30", "mig": {"enabled": True}}]}
    )
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    me1 = _profile_info(gpu, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1)
    me2 = _profile_info(gpu, N.NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1)
    assert (me1.name, me1.ofaCount, me2.name, me2.ofaCount) == (
        "MIG 1g.6gb+me",
        1,
        "MIG 2g.12gb+me",
        1,
    )
    N.nvmlDeviceCreateGpuInstance(gpu, me2.id)
    assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, me1.id) == 0
    with pytest.raises(N.NVMLError_InsufficientResources):
        N.nvmlDeviceCreateGpuInstance(gpu, me1.id)


def test_profiles_and_sizes_follow_the_driver_branch(simulate: Any) -> None:
    a100 = {"board": "A100-SXM4-40GB", "mig": {"enabled": True}}
    simulate({"driver": {"version": "470.57.02"}, "gpus": [a100]})
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    # R470 has only the v1 call (the V one comes with R510): no names, sizes as then.
    with pytest.raises(N.NVMLError_NotSupported):  # 1g.10gb came later
        N.nvmlDeviceGetGpuInstanceProfileInfo(gpu, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1)
    two = N.nvmlDeviceGetGpuInstanceProfileInfo(gpu, N.NVML_GPU_INSTANCE_PROFILE_2_SLICE, 1)
    assert two.memorySizeMB == 9984
    simulate({"driver": {"version": "535.161.08"}, "gpus": [a100]})
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    assert _profile_info(gpu, N.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2).name == "MIG 1g.10gb"
    assert _profile_info(gpu, N.NVML_GPU_INSTANCE_PROFILE_2_SLICE).memorySizeMB == 9856


def test_mig_on_a_driver_older_than_the_board_is_refused() -> None:
    data = {
        "format": 1,
        "driver": {"version": "550.54.15"},
        "gpus": [{"board": "B200", "mig": {"enabled": True}}],
    }
    with pytest.raises(hwinfo.sim.ScenarioError, match="MIG on board B200 needs driver 570"):
        parse_scenario(data, "t.json", "t")


def _capture_symbols(path: Any) -> tuple[tuple[int, ...], set[str]]:
    text = path.read_text(encoding="utf-8")
    symbols = set(re.findall(r"^(nvml\w+)$", text.split("nvml-symbols", 1)[-1], re.MULTILINE))
    driver = tuple(int(n) for n in path.stem.rsplit("__", 1)[1].split("."))
    return driver, symbols


def test_mig_symbols_exist_in_the_real_libraries() -> None:
    """Every MIG call the fake library implements, a real driver exports, and so does the
    fake library for that driver (else the implementation could never be reached)."""
    paths = [path for path in TEXT_CAPTURES if path.name.startswith("linux-")]
    require_captures(*paths or [None])
    checked = 0
    for path in paths:
        driver, real = _capture_symbols(path)
        if not real:
            continue  # this capture holds no symbol list
        ours = {s.name for s in nvml_lib_mig.SYMBOLS}
        assert ours - real == set(), path.name
        assert ours - exported(driver) == set(), path.name
        checked += 1
    assert checked >= 2


@pytest.mark.parametrize(
    ("order", "created"),
    [
        # MIG User Guide, "Creating GPU Instances" (A100-SXM4-40GB): -cgi 9,19,14,19 ...
        ([9, 19, 14, 19], [(2, 4), (7, 0), (4, 2), (8, 1)]),
        # ... -cgi 14,19,19,19,19,19 ...
        ([14, 19, 19, 19, 19, 19], [(5, 4), (13, 6), (7, 0), (8, 1), (9, 2), (10, 3)]),
        # ... and -cgi 19,19,14,9, where the 3g.20gb no longer fits ("Insufficient Resources").
        ([19, 19, 14, 9], [(13, 6), (11, 4), (3, 0), None]),
    ],
)
def test_driver_places_instances_as_the_user_guide_shows(
    simulate: Any, order: list[int], created: list[tuple[int, int] | None]
) -> None:
    simulate(
        {
            "driver": {"version": "535.161.08"},
            "gpus": [{"board": "A100-SXM4-40GB", "mig": {"enabled": True}}],
        }
    )
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    for profile_id, want in zip(order, created):
        if want is None:
            with pytest.raises(N.NVMLError_InsufficientResources):
                N.nvmlDeviceCreateGpuInstance(gpu, profile_id)
            continue
        info = N.nvmlGpuInstanceGetInfo(N.nvmlDeviceCreateGpuInstance(gpu, profile_id))
        assert (info.id, info.placement.start) == want


def test_a100_4g_and_3g_apart_before_r510(simulate: Any) -> None:
    layout = {"enabled": True, "gpu_instances": [{"profile": "4g.20gb"}, {"profile": "3g.20gb"}]}
    old = {"driver": {"version": "470.57.02"}, "gpus": [{"board": "A100-SXM4-40GB", "mig": layout}]}
    with pytest.raises(hwinfo.sim.ScenarioError, match="cannot exist together"):
        parse_scenario({"format": 1, **old}, "t.json", "t")
    simulate({**old, "gpus": [{"board": "A100-SXM4-40GB", "mig": {"enabled": True}}]})
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    N.nvmlDeviceCreateGpuInstance(gpu, 5)
    assert N.nvmlDeviceGetGpuInstanceRemainingCapacity(gpu, 9) == 0
    with pytest.raises(N.NVMLError_InsufficientResources):
        N.nvmlDeviceCreateGpuInstance(gpu, 9)
    new = {**old, "driver": {"version": "510.47.03"}}
    assert parse_scenario({"format": 1, **new}, "t.json", "t").gpus[0].mig is not None


def test_compute_instance_profiles_as_a100_lcip_lists_them(simulate: Any) -> None:
    """Real `nvidia-smi mig -lcip` of an A100-80GB 3g.40gb: 1c 3/3 14 SMs, 2c 1/1 28, 3g 1/1 42,
    all sharing the GI's 3 copy engines and 2 decoders."""
    simulate(
        {
            "driver": {"version": "535.161.08"},
            "gpus": [
                {
                    "board": "A100-SXM4-80GB",
                    "mig": {"enabled": True, "gpu_instances": [{"profile": "3g.40gb"}]},
                }
            ],
        }
    )
    gpu = N.nvmlDeviceGetHandleByIndex(0)
    (gi_id,) = {N.nvmlDeviceGetGpuInstanceId(N.nvmlDeviceGetMigDeviceHandleByIndex(gpu, 0))}
    gi = N.nvmlDeviceGetGpuInstanceById(gpu, gi_id)
    rows = []
    for index in (0, 1, 2):
        p = N.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, index, 0)
        rows.append(
            (
                p.name,
                p.id,
                p.instanceCount,
                p.multiprocessorCount,
                p.sharedCopyEngineCount,
                p.sharedDecoderCount,
                p.sharedEncoderCount,
                p.sharedJpegCount,
                p.sharedOfaCount,
            )
        )
    assert rows == [
        ("MIG 1c.3g.40gb", 0, 3, 14, 3, 2, 0, 0, 0),
        ("MIG 2c.3g.40gb", 1, 1, 28, 3, 2, 0, 0, 0),
        ("MIG 3g.40gb", 2, 1, 42, 3, 2, 0, 0, 0),
    ]
