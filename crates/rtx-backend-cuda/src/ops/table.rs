//! The table of a multi-tensor launch: one kernel over many tensors (an
//! optimizer step's parameters, a model's weights converted), the work cut
//! into chunks of `chunk` elements, a block per chunk.

use rtx_backend::{Error as BError, Result as BResult};

use crate::backend::CudaBackend;
use crate::runtime::args::DevPtr;
use crate::runtime::buffer::DevMem;
use crate::runtime::launch::MAX_GRID_X;

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
    tensors: usize,
}

impl TensorTable {
    /// A table for up to `tensors` tensors of `width` words each.
    pub(crate) fn new(tensors: usize, width: usize) -> Self {
        TensorTable {
            words: Vec::with_capacity(width * tensors),
            width,
            tensors: 0,
        }
    }

    /// A tensor of `n` elements at the addresses `addrs` (`width - 1` of
    /// them, in the order the kernel reads them; 0 where there is none).
    pub(crate) fn push(&mut self, addrs: &[u64], n: usize) {
        debug_assert_eq!(addrs.len() + 1, self.width, "a table entry's words");
        self.words.extend(addrs);
        self.words.push(n as u64);
        self.tensors += 1;
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
        for i in 0..self.tensors {
            let n = self.words[self.width * i + self.width - 1];
            let chunks = n.div_ceil(len);
            if chunks > u64::from(u32::MAX) {
                return Err(BError::SizeOverflow {
                    op,
                    what: format!("{n} elements of one tensor ({chunks} chunks)"),
                });
            }
            self.words
                .extend((0..chunks).map(|c| ((i as u64) << 32) | c));
        }
        let blocks = (self.words.len() - tab_words) as u64;
        if blocks == 0 {
            return Ok(None);
        }
        if blocks > MAX_GRID_X {
            return Err(BError::SizeOverflow {
                op,
                what: format!("{blocks} blocks of one launch"),
            });
        }
        let bytes: Vec<u8> = self.words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let mem = b.dev.upload_bytes(&bytes)?;
        let at: DevPtr<u64> = mem.ptr();
        let blocks_at = at.byte_add(8 * tab_words as u64);
        Ok(Some((mem, at, blocks_at, blocks as u32)))
    }
}
