//! One value the optimizer cannot see the making of.
//!
//! Both prefilters build bit masks from vector comparisons and then shift and combine them
//! as plain integers. Seeing the comparisons behind those integers, LLVM moved the integer
//! operations back into the vector domain a byte at a time (`vpextrb`, `vpinsrb`), and the
//! redaction scan ran several times slower. An empty `asm!` costs nothing and cannot be
//! seen through.

/// `m`, unchanged, as the result of an instruction the optimizer knows nothing about.
#[inline(always)]
pub(crate) fn opaque(mut m: u64) -> u64 {
    // SAFETY: the template is empty: the value is left in its register untouched.
    unsafe {
        std::arch::asm!(
            "/* {0} */",
            inout(reg) m,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    m
}
