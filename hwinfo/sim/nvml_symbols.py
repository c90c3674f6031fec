"""Which C functions libnvidia-ml.so.1 exports, driver branch by driver branch.

Source: the function declarations of NVIDIA's nvml.h in each CUDA release from 11.0 to 13.3
(the copies kept in the history of NVIDIA/go-nvml), each release mapped to the driver branch
it ships with (CUDA 11.0: R450 ... 12.6: R560, 12.8: R570 ... 13.1: R590, 13.2: R595,
13.3: R610). A library exports every function its nvml.h declares, the unversioned forms the
header hides behind `#define`s included, plus EXTRA_EXPORTS; functions the header stops
declaring stay exported except those in REMOVED. tests/sim/test_nvml_symbols.py holds this
against the symbol tables of real 590.48.01 and 610.57.04 libraries (the `readelf --dyn-syms`
sections of nvidia_gpu_exporter's captures:
https://github.com/utkuozdemir/nvidia_gpu_exporter/tree/e656cd8/internal/captures).
"""

from __future__ import annotations

import re
from functools import cache

# Branch -> the functions whose declaration first appears in the nvml.h of that branch's CUDA.
# R530 (CUDA 12.1) added none. Unknown: R565 (CUDA 12.7, no nvml.h at hand) is taken to export
# what R560 does; a function can also arrive in a later release of a branch than its first.
_FIRST_DECLARED: dict[int, str] = {
    450: """
        nvmlComputeInstanceDestroy nvmlComputeInstanceGetInfo nvmlDeviceClearAccountingPids
        nvmlDeviceClearCpuAffinity nvmlDeviceClearEccErrorCounts nvmlDeviceCreateGpuInstance
        nvmlDeviceDiscoverGpus nvmlDeviceFreezeNvLinkUtilizationCounter nvmlDeviceGetAPIRestriction
        nvmlDeviceGetAccountingBufferSize nvmlDeviceGetAccountingMode nvmlDeviceGetAccountingPids
        nvmlDeviceGetAccountingStats nvmlDeviceGetActiveVgpus nvmlDeviceGetApplicationsClock
        nvmlDeviceGetArchitecture nvmlDeviceGetAttributes nvmlDeviceGetAutoBoostedClocksEnabled
        nvmlDeviceGetBAR1MemoryInfo nvmlDeviceGetBoardId nvmlDeviceGetBoardPartNumber
        nvmlDeviceGetBrand nvmlDeviceGetBridgeChipInfo nvmlDeviceGetClock nvmlDeviceGetClockInfo
        nvmlDeviceGetComputeInstanceId nvmlDeviceGetComputeMode
        nvmlDeviceGetComputeRunningProcesses nvmlDeviceGetCount nvmlDeviceGetCount_v2
        nvmlDeviceGetCpuAffinity nvmlDeviceGetCpuAffinityWithinScope nvmlDeviceGetCreatableVgpus
        nvmlDeviceGetCudaComputeCapability nvmlDeviceGetCurrPcieLinkGeneration
        nvmlDeviceGetCurrPcieLinkWidth nvmlDeviceGetCurrentClocksThrottleReasons
        nvmlDeviceGetDecoderUtilization nvmlDeviceGetDefaultApplicationsClock
        nvmlDeviceGetDetailedEccErrors nvmlDeviceGetDeviceHandleFromMigDeviceHandle
        nvmlDeviceGetDisplayActive nvmlDeviceGetDisplayMode nvmlDeviceGetDriverModel
        nvmlDeviceGetEccMode nvmlDeviceGetEncoderCapacity nvmlDeviceGetEncoderSessions
        nvmlDeviceGetEncoderStats nvmlDeviceGetEncoderUtilization nvmlDeviceGetEnforcedPowerLimit
        nvmlDeviceGetFBCSessions nvmlDeviceGetFBCStats nvmlDeviceGetFanSpeed
        nvmlDeviceGetFanSpeed_v2 nvmlDeviceGetFieldValues nvmlDeviceGetGpuInstanceById
        nvmlDeviceGetGpuInstanceId nvmlDeviceGetGpuInstancePossiblePlacements
        nvmlDeviceGetGpuInstanceProfileInfo nvmlDeviceGetGpuInstanceRemainingCapacity
        nvmlDeviceGetGpuInstances nvmlDeviceGetGpuOperationMode
        nvmlDeviceGetGraphicsRunningProcesses nvmlDeviceGetGridLicensableFeatures
        nvmlDeviceGetGridLicensableFeatures_v2 nvmlDeviceGetGridLicensableFeatures_v3
        nvmlDeviceGetHandleByIndex nvmlDeviceGetHandleByIndex_v2 nvmlDeviceGetHandleByPciBusId
        nvmlDeviceGetHandleByPciBusId_v2 nvmlDeviceGetHandleBySerial nvmlDeviceGetHandleByUUID
        nvmlDeviceGetHostVgpuMode nvmlDeviceGetIndex nvmlDeviceGetInforomConfigurationChecksum
        nvmlDeviceGetInforomImageVersion nvmlDeviceGetInforomVersion nvmlDeviceGetMaxClockInfo
        nvmlDeviceGetMaxCustomerBoostClock nvmlDeviceGetMaxMigDeviceCount
        nvmlDeviceGetMaxPcieLinkGeneration nvmlDeviceGetMaxPcieLinkWidth
        nvmlDeviceGetMemoryAffinity nvmlDeviceGetMemoryErrorCounter nvmlDeviceGetMemoryInfo
        nvmlDeviceGetMigDeviceHandleByIndex nvmlDeviceGetMigMode nvmlDeviceGetMinorNumber
        nvmlDeviceGetMultiGpuBoard nvmlDeviceGetName nvmlDeviceGetNvLinkCapability
        nvmlDeviceGetNvLinkErrorCounter nvmlDeviceGetNvLinkRemotePciInfo
        nvmlDeviceGetNvLinkRemotePciInfo_v2 nvmlDeviceGetNvLinkState
        nvmlDeviceGetNvLinkUtilizationControl nvmlDeviceGetNvLinkUtilizationCounter
        nvmlDeviceGetNvLinkVersion nvmlDeviceGetP2PStatus nvmlDeviceGetPciInfo
        nvmlDeviceGetPciInfo_v2 nvmlDeviceGetPciInfo_v3 nvmlDeviceGetPcieReplayCounter
        nvmlDeviceGetPcieThroughput nvmlDeviceGetPerformanceState nvmlDeviceGetPersistenceMode
        nvmlDeviceGetPgpuMetadataString nvmlDeviceGetPowerManagementDefaultLimit
        nvmlDeviceGetPowerManagementLimit nvmlDeviceGetPowerManagementLimitConstraints
        nvmlDeviceGetPowerManagementMode nvmlDeviceGetPowerState nvmlDeviceGetPowerUsage
        nvmlDeviceGetProcessUtilization nvmlDeviceGetRemappedRows nvmlDeviceGetRetiredPages
        nvmlDeviceGetRetiredPagesPendingStatus nvmlDeviceGetRetiredPages_v2 nvmlDeviceGetSamples
        nvmlDeviceGetSerial nvmlDeviceGetSupportedClocksThrottleReasons
        nvmlDeviceGetSupportedEventTypes nvmlDeviceGetSupportedGraphicsClocks
        nvmlDeviceGetSupportedMemoryClocks nvmlDeviceGetSupportedVgpus nvmlDeviceGetTemperature
        nvmlDeviceGetTemperatureThreshold nvmlDeviceGetTopologyCommonAncestor
        nvmlDeviceGetTopologyNearestGpus nvmlDeviceGetTotalEccErrors
        nvmlDeviceGetTotalEnergyConsumption nvmlDeviceGetUUID nvmlDeviceGetUtilizationRates
        nvmlDeviceGetVbiosVersion nvmlDeviceGetVgpuMetadata nvmlDeviceGetVgpuProcessUtilization
        nvmlDeviceGetVgpuUtilization nvmlDeviceGetViolationStatus nvmlDeviceGetVirtualizationMode
        nvmlDeviceIsMigDeviceHandle nvmlDeviceModifyDrainState nvmlDeviceOnSameBoard
        nvmlDeviceQueryDrainState nvmlDeviceRegisterEvents nvmlDeviceRemoveGpu
        nvmlDeviceRemoveGpu_v2 nvmlDeviceResetApplicationsClocks nvmlDeviceResetGpuLockedClocks
        nvmlDeviceResetNvLinkErrorCounters nvmlDeviceResetNvLinkUtilizationCounter
        nvmlDeviceSetAPIRestriction nvmlDeviceSetAccountingMode nvmlDeviceSetApplicationsClocks
        nvmlDeviceSetAutoBoostedClocksEnabled nvmlDeviceSetComputeMode nvmlDeviceSetCpuAffinity
        nvmlDeviceSetDefaultAutoBoostedClocksEnabled nvmlDeviceSetDriverModel nvmlDeviceSetEccMode
        nvmlDeviceSetGpuLockedClocks nvmlDeviceSetGpuOperationMode nvmlDeviceSetMigMode
        nvmlDeviceSetNvLinkUtilizationControl nvmlDeviceSetPersistenceMode
        nvmlDeviceSetPowerManagementLimit nvmlDeviceSetVirtualizationMode nvmlDeviceValidateInforom
        nvmlErrorString nvmlEventSetCreate nvmlEventSetFree nvmlEventSetWait nvmlEventSetWait_v2
        nvmlGetBlacklistDeviceCount nvmlGetBlacklistDeviceInfoByIndex nvmlGetVgpuCompatibility
        nvmlGetVgpuVersion nvmlGpuInstanceCreateComputeInstance nvmlGpuInstanceDestroy
        nvmlGpuInstanceGetComputeInstanceById nvmlGpuInstanceGetComputeInstanceProfileInfo
        nvmlGpuInstanceGetComputeInstanceRemainingCapacity nvmlGpuInstanceGetComputeInstances
        nvmlGpuInstanceGetInfo nvmlInit nvmlInitWithFlags nvmlInit_v2 nvmlSetVgpuVersion
        nvmlShutdown nvmlSystemGetCudaDriverVersion nvmlSystemGetCudaDriverVersion_v2
        nvmlSystemGetDriverVersion nvmlSystemGetHicVersion nvmlSystemGetNVMLVersion
        nvmlSystemGetProcessName nvmlSystemGetTopologyGpuSet nvmlUnitGetCount nvmlUnitGetDevices
        nvmlUnitGetFanSpeedInfo nvmlUnitGetHandleByIndex nvmlUnitGetLedState nvmlUnitGetPsuInfo
        nvmlUnitGetTemperature nvmlUnitGetUnitInfo nvmlUnitSetLedState
        nvmlVgpuInstanceClearAccountingPids nvmlVgpuInstanceGetAccountingMode
        nvmlVgpuInstanceGetAccountingPids nvmlVgpuInstanceGetAccountingStats
        nvmlVgpuInstanceGetEccMode nvmlVgpuInstanceGetEncoderCapacity
        nvmlVgpuInstanceGetEncoderSessions nvmlVgpuInstanceGetEncoderStats
        nvmlVgpuInstanceGetFBCSessions nvmlVgpuInstanceGetFBCStats nvmlVgpuInstanceGetFbUsage
        nvmlVgpuInstanceGetFrameRateLimit nvmlVgpuInstanceGetLicenseStatus
        nvmlVgpuInstanceGetMdevUUID nvmlVgpuInstanceGetMetadata nvmlVgpuInstanceGetType
        nvmlVgpuInstanceGetUUID nvmlVgpuInstanceGetVmDriverVersion nvmlVgpuInstanceGetVmID
        nvmlVgpuInstanceSetEncoderCapacity nvmlVgpuTypeGetClass nvmlVgpuTypeGetDeviceID
        nvmlVgpuTypeGetFrameRateLimit nvmlVgpuTypeGetFramebufferSize nvmlVgpuTypeGetLicense
        nvmlVgpuTypeGetMaxInstances nvmlVgpuTypeGetMaxInstancesPerVm nvmlVgpuTypeGetName
        nvmlVgpuTypeGetNumDisplayHeads nvmlVgpuTypeGetResolution
    """,
    455: """
        nvmlDeviceGetAttributes_v2 nvmlDeviceGetComputeRunningProcesses_v2
        nvmlDeviceGetGraphicsRunningProcesses_v2 nvmlDeviceGetRowRemapperHistogram
        nvmlVgpuTypeGetGpuInstanceProfileId
    """,
    460: """
        nvmlComputeInstanceGetInfo_v2 nvmlDeviceCreateGpuInstanceWithPlacement
        nvmlDeviceSetTemperatureThreshold nvmlVgpuInstanceGetGpuInstanceId
    """,
    465: """
        nvmlDeviceResetMemoryLockedClocks nvmlDeviceSetMemoryLockedClocks
        nvmlGetExcludedDeviceCount nvmlGetExcludedDeviceInfoByIndex
    """,
    470: """
        nvmlDeviceGetClkMonStatus nvmlDeviceGetGpuInstancePossiblePlacements_v2
        nvmlDeviceGetGridLicensableFeatures_v4 nvmlDeviceGetMPSComputeRunningProcesses
        nvmlDeviceGetMPSComputeRunningProcesses_v2 nvmlDeviceGetNvLinkRemoteDeviceType
    """,
    495: """
        nvmlDeviceGetBusType nvmlDeviceGetIrqNum nvmlVgpuInstanceGetLicenseInfo
    """,
    510: """
        nvmlDeviceGetAdaptiveClockInfoStatus nvmlDeviceGetComputeRunningProcesses_v3
        nvmlDeviceGetGpuInstanceProfileInfoV nvmlDeviceGetGraphicsRunningProcesses_v3
        nvmlDeviceGetMPSComputeRunningProcesses_v3 nvmlDeviceGetMemoryBusWidth
        nvmlDeviceGetMemoryInfo_v2 nvmlDeviceGetNumFans nvmlDeviceGetNumGpuCores
        nvmlDeviceGetPcieLinkMaxSpeed nvmlDeviceGetPowerSource
        nvmlGpuInstanceGetComputeInstanceProfileInfoV nvmlVgpuInstanceGetGpuPciId
        nvmlVgpuInstanceGetLicenseInfo_v2
    """,
    515: """
        nvmlDeviceGetDefaultEccMode nvmlDeviceGetDynamicPstatesInfo nvmlDeviceGetGpcClkVfOffset
        nvmlDeviceGetGspFirmwareMode nvmlDeviceGetGspFirmwareVersion
        nvmlDeviceGetMinMaxClockOfPState nvmlDeviceGetMinMaxFanSpeed nvmlDeviceGetPcieSpeed
        nvmlDeviceGetSupportedPerformanceStates nvmlDeviceGetThermalSettings
        nvmlDeviceSetDefaultFanSpeed_v2 nvmlDeviceSetFanSpeed_v2 nvmlDeviceSetGpcClkVfOffset
        nvmlVgpuTypeGetCapabilities
    """,
    520: """
        nvmlDeviceGetGpcClkMinMaxVfOffset nvmlDeviceGetMemClkMinMaxVfOffset
        nvmlDeviceGetMemClkVfOffset nvmlDeviceGetPowerMode nvmlDeviceGetSupportedPowerModes
        nvmlDeviceGetTargetFanSpeed nvmlDeviceSetMemClkVfOffset nvmlDeviceSetPowerMode
        nvmlGpmMetricsGet nvmlGpmQueryDeviceSupport nvmlGpmSampleAlloc nvmlGpmSampleFree
        nvmlGpmSampleGet
    """,
    525: """
        nvmlDeviceCcuGetStreamState nvmlDeviceCcuSetStreamState nvmlDeviceClearFieldValues
        nvmlDeviceGetFanControlPolicy_v2 nvmlDeviceGetGpuFabricInfo
        nvmlDeviceGetGpuMaxPcieLinkGeneration nvmlDeviceGetVgpuCapabilities
        nvmlDeviceGetVgpuSchedulerCapabilities nvmlDeviceGetVgpuSchedulerLog
        nvmlDeviceGetVgpuSchedulerState nvmlDeviceSetFanControlPolicy
        nvmlDeviceSetNvLinkDeviceLowPowerThreshold nvmlDeviceSetVgpuSchedulerState
        nvmlGetVgpuDriverCapabilities nvmlGpmMigSampleGet
        nvmlGpuInstanceCreateComputeInstanceWithPlacement
        nvmlGpuInstanceGetComputeInstancePossiblePlacements
    """,
    535: """
        nvmlDeviceGetConfComputeGpuAttestationReport nvmlDeviceGetConfComputeGpuCertificate
        nvmlDeviceGetConfComputeMemSizeInfo nvmlDeviceGetConfComputeProtectedMemoryUsage
        nvmlDeviceGetCurrentClocksEventReasons nvmlDeviceGetJpgUtilization nvmlDeviceGetModuleId
        nvmlDeviceGetOfaUtilization nvmlDeviceGetRunningProcessDetailList
        nvmlDeviceGetSupportedClocksEventReasons nvmlDeviceSetConfComputeUnprotectedMemSize
        nvmlDeviceSetPowerManagementLimit_v2 nvmlGpmQueryIfStreamingEnabled
        nvmlGpmSetStreamingEnabled nvmlSystemGetConfComputeCapabilities
        nvmlSystemGetConfComputeGpusReadyState nvmlSystemGetConfComputeState
        nvmlSystemGetNvlinkBwMode nvmlSystemSetConfComputeGpusReadyState nvmlSystemSetNvlinkBwMode
    """,
    545: """
        nvmlDeviceGetC2cModeInfoV nvmlDeviceGetLastBBXFlushTime
    """,
    550: """
        nvmlDeviceGetGpuFabricInfoV nvmlDeviceGetNumaNodeId nvmlDeviceGetPciInfoExt
        nvmlDeviceGetProcessesUtilizationInfo nvmlDeviceGetSramEccErrorStatus
        nvmlDeviceGetVgpuHeterogeneousMode nvmlDeviceGetVgpuInstancesUtilizationInfo
        nvmlDeviceGetVgpuProcessesUtilizationInfo nvmlDeviceGetVgpuTypeCreatablePlacements
        nvmlDeviceGetVgpuTypeSupportedPlacements nvmlDeviceSetVgpuCapabilities
        nvmlDeviceSetVgpuHeterogeneousMode nvmlSystemGetConfComputeKeyRotationThresholdInfo
        nvmlSystemGetConfComputeSettings nvmlSystemSetConfComputeKeyRotationThresholdInfo
        nvmlVgpuInstanceGetPlacementId nvmlVgpuTypeGetFbReservation nvmlVgpuTypeGetGspHeapSize
    """,
    555: """
        nvmlDeviceGetCapabilities nvmlDeviceGetClockOffsets nvmlDeviceGetDriverModel_v2
        nvmlDeviceSetClockOffsets
    """,
    560: """
        nvmlSystemGetDriverBranch nvmlVgpuTypeGetBAR1Info
    """,
    570: """
        nvmlDeviceGetCoolerInfo nvmlDeviceGetCurrentClockFreqs nvmlDeviceGetDramEncryptionMode
        nvmlDeviceGetFanSpeedRPM nvmlDeviceGetMarginTemperature nvmlDeviceGetNvlinkBwMode
        nvmlDeviceGetNvlinkSupportedBwModes nvmlDeviceGetPerformanceModes nvmlDeviceGetPlatformInfo
        nvmlDeviceGetTemperatureV nvmlDevicePowerSmoothingActivatePresetProfile
        nvmlDevicePowerSmoothingSetState nvmlDevicePowerSmoothingUpdatePresetProfileParam
        nvmlDeviceSetDramEncryptionMode nvmlDeviceSetNvlinkBwMode
        nvmlDeviceWorkloadPowerProfileClearRequestedProfiles
        nvmlDeviceWorkloadPowerProfileGetCurrentProfiles
        nvmlDeviceWorkloadPowerProfileGetProfilesInfo
        nvmlDeviceWorkloadPowerProfileSetRequestedProfiles nvmlVgpuInstanceGetRuntimeStateSize
    """,
    575: """
        nvmlDeviceGetHandleByUUIDV nvmlGpuInstanceGetActiveVgpus nvmlGpuInstanceGetCreatableVgpus
        nvmlGpuInstanceGetVgpuHeterogeneousMode nvmlGpuInstanceGetVgpuSchedulerLog
        nvmlGpuInstanceGetVgpuSchedulerState nvmlGpuInstanceGetVgpuTypeCreatablePlacements
        nvmlGpuInstanceSetVgpuHeterogeneousMode nvmlGpuInstanceSetVgpuSchedulerState
        nvmlSystemEventSetCreate nvmlSystemEventSetFree nvmlSystemEventSetWait
        nvmlSystemRegisterEvents nvmlVgpuTypeGetMaxInstancesPerGpuInstance
    """,
    580: """
        nvmlDeviceGetAddressingMode nvmlDeviceGetGpuInstanceProfileInfoByIdV
        nvmlDeviceGetNvLinkInfo nvmlDeviceGetPdi nvmlDeviceGetPowerMizerMode_v1
        nvmlDeviceGetRepairStatus nvmlDeviceGetSramUniqueUncorrectedEccErrorCounts
        nvmlDeviceReadWritePRM_v1 nvmlDeviceSetPowerMizerMode_v1
    """,
    590: """
        nvmlDeviceGetHostname_v1 nvmlDeviceGetUnrepairableMemoryFlag_v1
        nvmlDeviceReadPRMCounters_v1 nvmlDeviceSetHostname_v1 nvmlDeviceSetRusdSettings_v1
        nvmlDeviceWorkloadPowerProfileUpdateProfiles_v1
    """,
    595: """
        nvmlDeviceGetRemappedRows_v2 nvmlDeviceGetVgpuSchedulerLog_v2
        nvmlDeviceGetVgpuSchedulerState_v2 nvmlDeviceSetVgpuSchedulerState_v2
        nvmlDeviceVgpuForceGspUnload nvmlGpuInstanceGetVgpuSchedulerLog_v2
        nvmlGpuInstanceGetVgpuSchedulerState_v2 nvmlGpuInstanceSetVgpuSchedulerState_v2
    """,
    610: """
        nvmlDeviceGetAccountingStats_v2 nvmlDeviceGetBBXTimeData_v1 nvmlSystemGetCPER_v1
    """,
}

# Exported by real libraries without a declaration in the nvml.h of their CUDA: the R440-era
# names of the excluded-device calls (nvml.h dropped them in CUDA 11.3; 590 and 610 still
# export them), NVIDIA's private export table, and one 610 function nvml.h 13.3 lacks.
# Unknown: the first branch of nvmlInternalGetExportTable (taken as R450, like the rest).
EXTRA_EXPORTS: dict[str, int] = {
    "nvmlInternalGetExportTable": 450,
    "nvmlDeviceGetHandles": 610,
}

# Functions a later nvml.h no longer declares, and the first branch without them. The 590 and
# 610 libraries lack them. Unknown: whether the R525 and R535 libraries still exported them.
REMOVED: dict[str, int] = {
    "nvmlDeviceGetPowerMode": 525,
    "nvmlDeviceGetSupportedPowerModes": 525,
    "nvmlDeviceSetPowerMode": 525,
    "nvmlDeviceCcuGetStreamState": 535,
    "nvmlDeviceCcuSetStreamState": 535,
}

# Functions that arrived within a branch, before the first branch whose nvml.h declares them
# (the process-list _v2 calls came with 450.66, as gpustat's NvidiaDriverMock models drivers:
# https://github.com/wookayin/gpustat/blob/master/gpustat/test_gpustat.py).
POINT_RELEASES: dict[str, tuple[int, ...]] = {
    "nvmlDeviceGetComputeRunningProcesses_v2": (450, 66),
    "nvmlDeviceGetGraphicsRunningProcesses_v2": (450, 66),
}

# The oldest branch with an nvml.h at hand. Unknown: what older libraries export; the simulator
# gives them the R450 set without MIG (which arrived with R450: https://docs.nvidia.com/datacenter/tesla/mig-user-guide/).
OLDEST_KNOWN = 450
_MIG_WORDS = ("Mig", "GpuInstance", "ComputeInstance")


def _since() -> dict[str, tuple[int, ...]]:
    since = {name: (branch,) for branch, names in _FIRST_DECLARED.items() for name in names.split()}
    since.update((name, (branch,)) for name, branch in EXTRA_EXPORTS.items())
    since.update(POINT_RELEASES)
    return since


SINCE: dict[str, tuple[int, ...]] = _since()


@cache
def exported(driver: tuple[int, ...]) -> frozenset[str]:
    """The nvml* functions the library of this driver version exports."""
    names = {
        name
        for name, first in SINCE.items()
        if first <= driver and driver[:1] < (REMOVED.get(name, 1 << 30),)
    }
    if driver[:1] < (OLDEST_KNOWN,):
        older = {name for name, first in SINCE.items() if first == (OLDEST_KNOWN,)}
        names = {n for n in older if not any(word in n for word in _MIG_WORDS)}
    return frozenset(names)


_VERSION_SUFFIX = re.compile(r"_v\d+$")
# pynvml's nvmlInit() calls nvmlInitWithFlags(0): a fault on "nvmlInit" covers all three.
_FAULT_ALIASES = {"nvmlInitWithFlags": "nvmlInit"}


def fault_name(symbol: str) -> str:
    """The name a scenario fault uses for a C symbol: without _vN, init variants as nvmlInit."""
    name = _VERSION_SUFFIX.sub("", symbol)
    return _FAULT_ALIASES.get(name, name)


@cache
def known_fault_calls() -> frozenset[str]:
    """Every name a scenario fault may give in `call`: any NVML function (the simulator
    implements none beyond these, tests/sim/test_nvml_symbols.py)."""
    return frozenset(fault_name(name) for name in SINCE)
