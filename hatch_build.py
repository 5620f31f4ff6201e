"""Wheel build hook: compile the differ's hot loops (baseline/run/_hotloops.c) into the wheel.

With a C compiler the wheel carries the shared library and is tagged for this platform; without
one it stays pure Python and `baseline diff` runs the numpy versions (same reports, slower).
An editable install (`uv sync`) builds the library in place, beside its source.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class HotLoopsHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        # loaded by path: the build environment has hatchling, not the project's dependencies
        path = Path(self.root) / "baseline" / "run" / "_build_native.py"
        spec = importlib.util.spec_from_file_location("_build_native", path)
        mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
        if version == "editable":
            mod.build()
            return
        self._tmp = tempfile.TemporaryDirectory(prefix="tracebase-hotloops-")
        out = mod.build(dest=Path(self._tmp.name))
        if out is not None:
            build_data["force_include"][str(out)] = f"baseline/run/{out.name}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:  # the library is in the wheel now
            tmp.cleanup()
