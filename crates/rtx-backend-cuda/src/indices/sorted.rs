//! What the maker of an index list knows of its order ([`Sorted`]), and
//! how that carries through a concatenation: a sorted list's scatter plan
//! skips the sort.

/// What a list's maker knows of its order: its entries are non-decreasing
/// and every one is in `lo..=hi` (bounds: not necessarily entries). Its
/// plan skips the sort (`build::Request::sorted`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sorted {
    pub lo: u32,
    pub hi: u32,
}

impl Sorted {
    /// The order of parts `(order, len, offset)` placed one after another,
    /// each entry plus its part's offset: sorted when every non-empty part
    /// is and each starts at or above where the one before it ends (`None`
    /// otherwise, and for a list with no entry).
    pub fn concat(parts: impl IntoIterator<Item = (Option<Sorted>, usize, u32)>) -> Option<Sorted> {
        let mut whole: Option<Sorted> = None;
        for (order, len, offset) in parts {
            if len == 0 {
                continue;
            }
            let s = order?;
            let part = Sorted {
                lo: s.lo.checked_add(offset)?,
                hi: s.hi.checked_add(offset)?,
            };
            whole = match whole {
                None => Some(part),
                Some(w) if w.hi <= part.lo => Some(Sorted {
                    lo: w.lo,
                    hi: part.hi,
                }),
                Some(_) => return None,
            };
        }
        whole
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(lo: u32, hi: u32) -> Option<Sorted> {
        Some(Sorted { lo, hi })
    }

    #[test]
    fn a_concatenation_is_sorted_when_its_parts_are_and_follow_each_other() {
        // a mini-batch's destinations: the seeds' repeats, then the hop's
        let hop = [(s(0, 1023), 15_360, 0), (s(1024, 16_383), 153_600, 0)];
        assert_eq!(Sorted::concat(hop), s(0, 16_383));
        // offsets shift the ranges; a shared end value is still in order
        assert_eq!(
            Sorted::concat([(s(0, 9), 5, 10), (s(0, 3), 4, 20)]),
            s(10, 23)
        );
        assert_eq!(Sorted::concat([(s(2, 5), 3, 0), (s(5, 5), 1, 0)]), s(2, 5));
        // empty parts are skipped, whatever they say
        let parts = [(None, 0, 0), (s(1, 2), 2, 0), (s(0, 0), 0, 9)];
        assert_eq!(Sorted::concat(parts), s(1, 2));
        for parts in [
            vec![(s(0, 10), 3, 0), (s(9, 20), 3, 0)], // the ranges overlap
            vec![(s(0, 10), 3, 0), (None, 2, 0)],     // a part of unknown order
            vec![(s(5, 6), 3, 0), (s(0, 1), 3, 4)],   // too small an offset
            vec![(s(0, u32::MAX - 1), 3, 2)],         // past u32::MAX
            vec![],
            vec![(s(0, 0), 0, 0)],
        ] {
            assert_eq!(Sorted::concat(parts.clone()), None, "{parts:?}");
        }
    }

    /// Soundness against real lists: whenever `concat` says sorted, the
    /// concatenated entries are non-decreasing and inside its bounds.
    #[test]
    fn what_concat_calls_sorted_is_sorted() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: u32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(m)) as u32
        };
        let mut said = 0;
        for _ in 0..20_000 {
            let mut parts = Vec::new();
            let mut whole = Vec::new();
            for _ in 0..1 + next(4) {
                let len = next(4) as usize;
                let base = next(20);
                let mut v: Vec<u32> = (0..len).map(|_| base + next(6)).collect();
                let sorted = next(4) != 0;
                if sorted {
                    v.sort_unstable();
                }
                // bounds as loose as a maker may give, or none
                let order = (sorted && !v.is_empty()).then(|| Sorted {
                    lo: v[0] - next(v[0] + 1),
                    hi: v[len - 1] + next(3),
                });
                let offset = next(12);
                whole.extend(v.iter().map(|e| e + offset));
                parts.push((order, len, offset));
            }
            if let Some(w) = Sorted::concat(parts.clone()) {
                said += 1;
                assert!(whole.is_sorted(), "{parts:?}: {whole:?}");
                assert!(
                    whole.iter().all(|&e| w.lo <= e && e <= w.hi),
                    "{parts:?}: {w:?}"
                );
            }
        }
        assert!(said > 1000, "the property was tested {said} times");
    }
}
