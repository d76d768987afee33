//! The loss hash of an epoch: FNV-1a 64 over the bits of every step's loss,
//! in step order, so two epochs (two runs, two backends) that computed the
//! same losses to the last bit show the same 16 hex digits.
//!
//! Step `s`'s loss is the `f64` the trainer reads ([`StepReport::loss`](super::StepReport);
//! an `f32` loss widened exactly, so equal `f64` bits are equal `f32`
//! bits); its bit pattern's 8 bytes, little-endian first, are folded in
//! with FNV-1a 64 (offset basis `0xcbf29ce484222325`, prime
//! `0x100000001b3`). An epoch with no step hashes to the offset basis.

/// The hash of no step: FNV-1a 64's offset basis.
pub const LOSS_HASH_START: u64 = 0xcbf2_9ce4_8422_2325;

const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// `hash` with one more step's `loss` folded in.
pub fn loss_hash_step(hash: u64, loss: f64) -> u64 {
    loss.to_bits()
        .to_le_bytes()
        .iter()
        .fold(hash, |h, &b| (h ^ u64::from(b)).wrapping_mul(FNV_PRIME))
}

/// The loss hash of `losses`, in order.
pub fn loss_hash(losses: impl IntoIterator<Item = f64>) -> u64 {
    losses.into_iter().fold(LOSS_HASH_START, loss_hash_step)
}

/// A loss hash as printed: 16 lower-case hex digits.
pub fn loss_hash_hex(hash: u64) -> String {
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_fnv1a_over_the_little_endian_bytes() {
        // FNV-1a 64 of the 8 bytes of 1.0f64 (0x3ff0000000000000), byte by byte
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in [0u8, 0, 0, 0, 0, 0, 0xf0, 0x3f] {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        assert_eq!(loss_hash([1.0]), h);
        assert_eq!(loss_hash([]), LOSS_HASH_START);
        assert_eq!(loss_hash_hex(loss_hash([])), "cbf29ce484222325");
        // order and every bit count
        assert_ne!(loss_hash([1.0, 2.0]), loss_hash([2.0, 1.0]));
        assert_ne!(
            loss_hash([1.0]),
            loss_hash([f64::from_bits(1.0f64.to_bits() + 1)])
        );
        assert_ne!(loss_hash([0.0]), loss_hash([-0.0]));
        assert_eq!(loss_hash_hex(1).len(), 16);
    }
}
