"""AMD GPU instruction classes from the mnemonic of an ISA line (CDNA/gfx9 naming; RDNA's
`s_wait_*` and `v_wmma*` too).

The classes are those a kernel engineer reads a hot line by, close to the thread-trace
categories (FORMATS.md: SMEM, SALU, VMEM, FLAT, LDS, VALU, JUMP/NEXT, IMMED incl. `s_waitcnt`),
with MFMA (not a category there) and barriers split out: `valu`, `salu`, `vmem`, `smem`, `lds`,
`mfma`, `branch`, `waitcnt`, `barrier`, and `other` (s_nop, s_endpgm, messages, exports).
"""

from __future__ import annotations

CLASSES = ("valu", "salu", "vmem", "smem", "lds", "mfma", "branch", "waitcnt", "barrier", "other")
CLASS_LABELS = {"valu": "VALU", "salu": "SALU", "vmem": "VMEM", "smem": "SMEM", "lds": "LDS", "mfma": "MFMA",
                "branch": "branch", "waitcnt": "waitcnt", "barrier": "barrier", "other": "other"}

_VMEM_PREFIXES = ("global_", "buffer_", "flat_", "scratch_", "tbuffer_", "image_")
_SMEM_PREFIXES = ("s_load_", "s_buffer_load_", "s_store_", "s_buffer_store_", "s_scratch_", "s_dcache_",
                  "s_memtime", "s_memrealtime", "s_atc_probe", "s_prefetch_")
_BRANCH_PREFIXES = ("s_branch", "s_cbranch_", "s_setpc_", "s_swappc_", "s_call_", "s_rfe_")
_OTHER = ("s_nop", "s_endpgm", "s_sleep", "s_sendmsg", "s_setprio", "s_trap", "s_ttracedata", "s_icache_inv",
          "s_code_end", "s_sethalt", "s_inst_prefetch", "exp")
_MFMA_PREFIXES = ("v_mfma", "v_smfmac", "v_wmma", "v_swmmac")


def mnemonic(isa: str) -> str:
    """The opcode of an ISA line (`v_add_f32_e32 v1, v2, v3` -> `v_add_f32_e32`), lower case."""
    text = isa.strip()
    return text.split(None, 1)[0].lower() if text else ""


def instruction_class(isa: str) -> str | None:
    """The class of one instruction, or None when the text is not an instruction (empty,
    a comment `;...` or a label `name:`)."""
    op = mnemonic(isa)
    if not op or op.startswith(";") or op.endswith(":"):
        return None
    if op.startswith(_MFMA_PREFIXES):
        return "mfma"
    if op.startswith("s_waitcnt") or op.startswith("s_wait_"):
        return "waitcnt"
    if op.startswith("s_barrier"):
        return "barrier"
    if op.startswith(_BRANCH_PREFIXES):
        return "branch"
    if op.startswith(_SMEM_PREFIXES):
        return "smem"
    if op.startswith(_OTHER):
        return "other"
    if op.startswith("s_"):
        return "salu"
    if op.startswith("ds_"):
        return "lds"
    if op.startswith(_VMEM_PREFIXES):
        return "vmem"
    if op.startswith("v_"):
        return "valu"
    return "other"
