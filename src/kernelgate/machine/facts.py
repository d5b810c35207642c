"""What ``kernelgate doctor`` knows about a machine: :class:`Facts`, read once by
:func:`kernelgate.machine.doctor.gather` and judged by the rules of :mod:`kernelgate.machine.fitness`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelgate.machine.compile_cache import CacheFolder
from kernelgate.machine.fingerprint import HostFingerprint, RecordedHosts
from kernelgate.machine.identity import GpuIdentity, cpu_arch_key
from kernelgate.machine.software import KernelImages
from kernelgate.machine.state import GpuState


@dataclass(frozen=True)
class Facts:
    """What :func:`~kernelgate.machine.doctor.gather` read; every field may be missing where it could
    not be read."""

    nvml_error: str | None = None
    identity: GpuIdentity | None = None
    state: GpuState | None = None
    own_pid: int = 0
    torch_version: str | None = None
    torch_error: str | None = None
    torch_cuda: str | None = None  # torch.version.cuda; None for a CPU-only build
    torch_gpu: bool = False  # torch.cuda.is_available()
    arch_list: tuple[str, ...] = ()  # torch.cuda.get_arch_list()
    cudnn_version: str | None = None
    cudnn_benchmark: bool | None = None
    cudnn_deterministic: bool | None = None
    ultralytics: str | None = None
    variables: Mapping[str, str] = field(default_factory=dict)  # speed-relevant variables now
    set_by_import: Mapping[str, str] = field(default_factory=dict)  # what `import ultralytics` set
    cache_path: str = ""
    cache_bytes: int | None = None
    cache_free_bytes: int | None = None
    cache_writable: bool | None = None
    suite_cache_bytes: int | None = None  # the largest JIT cache a recorded cold start left
    compile_caches: tuple[CacheFolder, ...] = ()  # torch.compile's: Inductor's and Triton's
    ci: str | None = None  # the CI system this runs under (None: not CI)
    baseline_dir: str = "baselines"
    baseline_keys: tuple[str, ...] = ()
    baseline_hosts: RecordedHosts | None = None  # the hosts that recorded baselines/<key>/ (None: none)
    cpu: str = ""
    cpu_count: int = 1
    load_avg: float | None = None
    cpu_governor: str | None = None
    cpu_speeds_ms: Mapping[int, float] = field(default_factory=dict)  # a loop per CPU (machine.cpuspeed)
    cpus_usable: int = 0  # the CPUs this process may run on (its affinity); 0: not read
    gpus_on_host: int = 0  # the GPUs the host's driver shows (NVML, whatever CUDA_VISIBLE_DEVICES hides)
    gpus_visible: int = 0  # of them, those CUDA_VISIBLE_DEVICES leaves this process
    threads_configured: int | None = None  # threads in [tool.kernelgate] (the command reads it)
    # whether each Python process compiles the sources it imports (machine/bytecode.py); None: not read
    compiles_imports: bool | None = None

    @property
    def key(self) -> str:
        return self.identity.key if self.identity else cpu_arch_key()

    @property
    def host(self) -> HostFingerprint:
        """This machine's fingerprint, as a round measured here records it."""
        return HostFingerprint.of(
            self.identity,
            cpu=self.cpu,
            cpu_count=self.cpu_count,
            torch=self.torch_version,
            cuda=self.torch_cuda,
            cudnn=self.cudnn_version,
        )

    @property
    def images(self) -> KernelImages | None:
        if self.identity is None or not self.arch_list:
            return None
        return KernelImages(self.arch_list, self.identity.compute_capability)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["key"] = self.key
        data["host"] = self.host.to_json()
        data["baseline_hosts"] = None if self.baseline_hosts is None else self.baseline_hosts.to_json()
        return data
