"""Where tracebase's data files are, in a checkout or in an installed package.

The BPF C sources (`bpf/*.c`), the probe sets (`bpf/probes/*.yaml`), the curated
`expected_errors.yaml` and the curated fallback call families (`fallback_calls.yaml`) live at
the top of the checkout; the wheel carries them as package data under `tracer/_data/`
(pyproject: [tool.hatch.build.targets.wheel.force-include]). Every module finds them through
here, never through `Path(__file__).parents[n]`, so `tracer record` and
`baseline diff` work from any directory once the wheel is installed.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DATA = Path(__file__).resolve().parent / "_data"  # installed wheel
CHECKOUT = Path(__file__).resolve().parents[1]  # source tree / editable install


def find(*parts: str) -> Path:
    """The installed package's copy of a data file if there is one, else the checkout's.

    The returned path may not exist (a broken install): callers name it in their error.
    """
    packaged = PACKAGE_DATA.joinpath(*parts)
    return packaged if packaged.exists() else CHECKOUT.joinpath(*parts)


BPF_DIR = find("bpf")
PROBES_DIR = BPF_DIR / "probes"
EXPECTED_ERRORS = find("expected_errors.yaml")
FALLBACK_CALLS = find("fallback_calls.yaml")
