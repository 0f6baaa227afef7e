"""Profiled kernel names -> source kernels.

rocpd and hipcc report device-side mangled names (`_Z12matmul_tiledPKfS0_Pfi`), sometimes with a
`.kd` suffix (the kernel descriptor symbol); other tools print demangled names with or without
the parameter list, template instantiations (`void scale<float>(float*, int)`) included.
"""

from __future__ import annotations

from rocm_perf.source.kernels import KernelInfo


def _strip_suffix(name: str) -> str:
    name = name.strip()
    if name.endswith(".kd"):
        name = name[:-3]
    return name


def _cut_at_depth0(name: str, stop: str) -> str:
    """The prefix of `name` before the first `stop` character outside <> and ()."""
    depth = 0
    for i, ch in enumerate(name):
        if ch in "<(":
            if depth == 0 and ch == stop:
                return name[:i]
            depth += 1
        elif ch in ">)":
            depth -= 1
    return name


def demangled_base(name: str) -> tuple[str, str | None]:
    """`void ns::scale<float>(float*, int)` -> ("ns::scale", "float")."""
    head = _cut_at_depth0(name, "(").strip()
    # Drop a return type: the last space outside template brackets separates it from the name.
    depth, split = 0, -1
    for i, ch in enumerate(head):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0:
            split = i
    head = head[split + 1 :] if split >= 0 else head
    base = _cut_at_depth0(head, "<")
    template_args = head[len(base) + 1 : -1] if len(head) > len(base) else None
    return base.strip(), template_args


def match_kernel(profiled_name: str, analysis) -> KernelInfo | None:
    """The source kernel a profiled name refers to, or None when it is not in this file."""
    name = _strip_suffix(profiled_name)
    kernels: list[KernelInfo] = list(analysis.kernels)
    if not name:
        return None
    if name.startswith("_Z"):
        for kernel in kernels:
            if name == kernel.mangled or name in kernel.instantiations:
                return kernel
        for kernel in kernels:
            if kernel.is_template and name.startswith(kernel.mangled_prefix):
                return kernel
        return None
    base, _template_args = demangled_base(name)
    if "::" in base.lstrip(":"):
        qualified = base.lstrip(":")
        return next((k for k in kernels if k.qualified_name == qualified), None)
    return next((k for k in kernels if k.name == base), None)
