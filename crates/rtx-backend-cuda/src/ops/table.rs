//! The table of a multi-tensor launch: one kernel over many tensors (an
//! optimizer step's parameters, a model's weights converted), the work cut
//! into chunks of `chunk` elements, a block per chunk.

use rtx_backend::{Error as BError, Result as BResult};

use crate::backend::CudaBackend;
use crate::runtime::args::DevPtr;
use crate::runtime::buffer::DevMem;
use crate::runtime::launch::MAX_GRID_X;

/// The block words of tensors of `lens` elements in chunks of `len`: a
/// word `tensor << 32 | chunk` per chunk, tensors in order.
///
/// # Errors
/// [`BError::SizeOverflow`] for a tensor of more than `u32::MAX` chunks or
/// more blocks than one launch's grid holds.
pub(crate) fn block_words(
    lens: impl Iterator<Item = u64>,
    len: u64,
    op: &'static str,
) -> BResult<Vec<u64>> {
    let chunks: Vec<u64> = lens.map(|n| n.div_ceil(len)).collect();
    if let Some(&c) = chunks.iter().find(|&&c| c > u64::from(u32::MAX)) {
        return Err(BError::SizeOverflow {
            op,
            what: format!("{c} chunks of {len} elements in one tensor"),
        });
    }
    let blocks: u64 = chunks.iter().sum();
    if blocks > MAX_GRID_X {
        return Err(BError::SizeOverflow {
            op,
            what: format!("{blocks} blocks of one launch"),
        });
    }
    Ok(chunks
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| (0..c).map(move |k| ((i as u64) << 32) | k))
        .collect())
}

/// An uploaded [`TensorTable`]: its memory, the tensor table, the block
/// words and the number of blocks.
pub(crate) type Uploaded = (DevMem, DevPtr<u64>, DevPtr<u64>, u32);

/// `width` words per tensor (its addresses, then its element count `n`),
/// then, once uploaded, a word per block (`tensor << 32 | chunk`): the
/// block works on elements `[chunk * len, min((chunk + 1) * len, n))` of
/// that tensor.
pub(crate) struct TensorTable {
    words: Vec<u64>,
    width: usize,
}

impl TensorTable {
    /// A table for up to `tensors` tensors of `width` words each.
    pub(crate) fn new(tensors: usize, width: usize) -> Self {
        TensorTable {
            words: Vec::with_capacity(width * tensors),
            width,
        }
    }

    /// A tensor of `n` elements at the addresses `addrs` (`width - 1` of
    /// them, in the order the kernel reads them; 0 where there is none).
    pub(crate) fn push(&mut self, addrs: &[u64], n: usize) {
        debug_assert_eq!(addrs.len() + 1, self.width, "a table entry's words");
        self.words.extend(addrs);
        self.words.push(n as u64);
    }

    /// The block words appended for chunks of `len` elements; uploads the
    /// whole table: `(memory, table address, blocks address, blocks)`, or
    /// `None` without elements. `op` names the operation in errors.
    pub(crate) fn upload(
        mut self,
        b: &CudaBackend,
        len: u64,
        op: &'static str,
    ) -> BResult<Option<Uploaded>> {
        let tab_words = self.words.len();
        let lens = self.words.chunks(self.width).map(|e| e[self.width - 1]);
        let blocks = block_words(lens, len, op)?;
        let nblocks = blocks.len() as u32;
        if nblocks == 0 {
            return Ok(None);
        }
        self.words.extend(blocks);
        let bytes: Vec<u8> = self.words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let mem = b.dev.upload_bytes(&bytes)?;
        let at: DevPtr<u64> = mem.ptr();
        let blocks_at = at.byte_add(8 * tab_words as u64);
        Ok(Some((mem, at, blocks_at, nblocks)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_per_chunk_of_each_tensor_in_order() {
        // 0 elements: no block; 1 and 4096: one; 4097: two; 3 * 4096 + 5: four
        let lens = [0u64, 1, 4096, 4097, 3 * 4096 + 5];
        let w = block_words(lens.into_iter(), 4096, "t").unwrap();
        let want: Vec<u64> = [
            (1u64, 0u64),
            (2, 0),
            (3, 0),
            (3, 1),
            (4, 0),
            (4, 1),
            (4, 2),
            (4, 3),
        ]
        .iter()
        .map(|&(t, c)| (t << 32) | c)
        .collect();
        assert_eq!(w, want);
        assert!(
            block_words([0u64, 0].into_iter(), 7, "t")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn too_many_chunks_or_blocks_are_size_errors() {
        let e = block_words([u64::MAX].into_iter(), 1, "convert_all").unwrap_err();
        assert!(
            matches!(&e, BError::SizeOverflow { op: "convert_all", what } if what.contains("in one tensor")),
            "{e}"
        );
        // each tensor fits, together they pass one launch's grid
        let half = MAX_GRID_X / 2 + 1;
        let e = block_words([half, half].into_iter(), 1, "adam_step").unwrap_err();
        assert!(
            matches!(&e, BError::SizeOverflow { what, .. } if what.contains("blocks of one launch")),
            "{e}"
        );
    }
}
