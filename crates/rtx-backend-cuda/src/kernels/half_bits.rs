//! The host port of kernels/common.cuh's half conversions (`Bf16` and `F16`:
//! `narrow`, `widen`, `widen_sum`), statement for statement, tested here
//! against the `half` crate on a large sample of f32 patterns (every
//! rounding boundary of both types among them) and every half pattern. The
//! device's own bits are compared with `half` on all 2^32 f32 patterns by
//! `conversions_are_the_hosts_on_every_f32_pattern` (tests/half.rs); this
//! port keeps the algorithm readable and checkable without a device. Change
//! both together.

/// `Bf16::narrow`: f32 to bf16, round to nearest even.
pub(crate) fn bf16_narrow(f: f32) -> u16 {
    let x = f.to_bits();
    if (x & 0x7fff_ffff) > 0x7f80_0000 {
        return (((x >> 16) | 0x40) & 0xffff) as u16;
    }
    let r = 0x8000u32;
    let up = u32::from((x & r) != 0 && (x & (3 * r - 1)) != 0);
    (((x >> 16) + up) & 0xffff) as u16
}

/// `Bf16::widen`: bf16 to f32 (a NaN quieted).
pub(crate) fn bf16_widen(h: u16) -> f32 {
    let mut h = u32::from(h);
    if (h & 0x7fff) > 0x7f80 {
        h |= 0x40;
    }
    f32::from_bits(h << 16)
}

/// `Bf16::widen_sum`: the summand of a stored bf16 (NaN payload kept as is).
pub(crate) fn bf16_widen_sum(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// `F16::narrow`: f32 to f16, round to nearest even, subnormals kept.
pub(crate) fn f16_narrow(f: f32) -> u16 {
    let x = f.to_bits();
    let (sign, exp, man) = (x & 0x8000_0000, x & 0x7f80_0000, x & 0x007f_ffff);
    let hs = sign >> 16;
    if exp == 0x7f80_0000 {
        return (hs | 0x7c00 | if man != 0 { 0x0200 } else { 0 } | (man >> 13)) as u16;
    }
    let he = (exp >> 23) as i32 - 127 + 15;
    if he >= 0x1f {
        return (hs | 0x7c00) as u16;
    }
    if he <= 0 {
        if 14 - he > 24 {
            return hs as u16;
        }
        let m = man | 0x0080_0000;
        let mut hm = m >> (14 - he) as u32;
        let rb = 1u32 << (13 - he) as u32;
        if (m & rb) != 0 && (m & (3 * rb - 1)) != 0 {
            hm += 1;
        }
        return (hs | hm) as u16;
    }
    let v = hs | ((he as u32) << 10) | (man >> 13);
    let rb = 0x1000u32;
    (if (man & rb) != 0 && (man & (3 * rb - 1)) != 0 {
        v + 1
    } else {
        v
    }) as u16
}

/// `F16::widen`: f16 to f32, exact (a NaN quieted).
pub(crate) fn f16_widen(i: u16) -> f32 {
    let i = u32::from(i);
    if (i & 0x7fff) == 0 {
        return f32::from_bits(i << 16);
    }
    let (hs, he, hm) = (i & 0x8000, i & 0x7c00, i & 0x03ff);
    let sign = hs << 16;
    if he == 0x7c00 {
        return f32::from_bits(if hm == 0 {
            sign | 0x7f80_0000
        } else {
            sign | 0x7fc0_0000 | (hm << 13)
        });
    }
    if he == 0 {
        // __clz of the 32-bit hm, less 16 and 6
        let e = hm.leading_zeros() - 16 - 6;
        let exp = (127 - 15 - e) << 23;
        let man = (hm << (14 + e)) & 0x7f_ffff;
        return f32::from_bits(sign | exp | man);
    }
    let exp = ((he >> 10) + 127 - 15) << 23;
    f32::from_bits(sign | exp | (hm << 13))
}

#[cfg(test)]
mod tests {
    use rtx_backend::workload::splitmix64;
    use rtx_backend::{bf16, f16};

    use super::*;

    /// f32 patterns: a random sample, and every top-16-bit pattern with low
    /// bits on and around both types' rounding boundaries (bf16's round bit
    /// is bit 15, f16's bit 12 for normals and higher for subnormals).
    fn patterns() -> impl Iterator<Item = u32> {
        const LOW: [u32; 12] = [
            0, 1, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff,
        ];
        let grid = (0..=0xffffu32).flat_map(|hi| LOW.iter().map(move |&lo| (hi << 16) | lo));
        let random = (0..1u64 << 20).map(|i| splitmix64(77, i) as u32);
        grid.chain(random)
    }

    #[test]
    fn the_ported_narrowing_is_halfs() {
        for x in patterns() {
            let f = f32::from_bits(x);
            assert_eq!(
                bf16_narrow(f),
                bf16::from_f32(f).to_bits(),
                "bf16 of {x:#010x}"
            );
            assert_eq!(
                f16_narrow(f),
                f16::from_f32(f).to_bits(),
                "f16 of {x:#010x}"
            );
        }
    }

    #[test]
    fn the_ported_widening_is_halfs_on_every_half_pattern() {
        for h in 0..=u16::MAX {
            let (b, g) = (bf16::from_bits(h), f16::from_bits(h));
            assert_eq!(
                bf16_widen(h).to_bits(),
                b.to_f32().to_bits(),
                "bf16 {h:#06x}"
            );
            assert_eq!(f16_widen(h).to_bits(), g.to_f32().to_bits(), "f16 {h:#06x}");
            // the summands differ from the widening in NaN payloads alone
            let s = bf16_widen_sum(h);
            assert!(
                s.to_bits() == bf16_widen(h).to_bits() || (s.is_nan() && b.is_nan()),
                "bf16 summand {h:#06x}"
            );
        }
    }
}
