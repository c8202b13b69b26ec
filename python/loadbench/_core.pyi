"""Type stubs for the native extension `loadbench._core` (partial: each part adds its own)."""
from typing import Any, Optional

def build_info() -> dict[str, str]: ...

class Server:
    """Boost.Beast HTTP/1.1 reference server running in this process on its own threads."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        http: bool = True,
        tls: bool = False,
        tls_port: int = 0,
        cert: Optional[str] = None,
        key: Optional[str] = None,
        workers: int = 1,
        max_body: int = 1048576,
        header_timeout_ms: int = 10000,
        idle_timeout_ms: int = 60000,
        accept: str = "reuseport",
    ) -> None: ...
    def start(self) -> None: ...
    def stop(self, timeout: float = 10.0) -> bool: ...
    @property
    def running(self) -> bool: ...
    @property
    def http_port(self) -> Optional[int]: ...
    @property
    def https_port(self) -> Optional[int]: ...
    @property
    def workers(self) -> int: ...
    def counters(self) -> dict[str, Any]: ...
    def __enter__(self) -> "Server": ...
    def __exit__(self, *exc: object) -> None: ...

def __getattr__(name: str) -> Any: ...  # the other parts' bindings
