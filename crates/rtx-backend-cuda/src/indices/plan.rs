//! A scatter plan on the device: the plan's positions and every level's
//! chunk tables (uploaded from a host `IndexPlan`, or written by
//! `plan_build`), what the level chains (`chain`) read.

use rtx_backend::{IndexPlan, Result as BResult};

use crate::indices::levels::{build_levels, window_table};
use crate::runtime::args::DevPtr;
use crate::runtime::buffer::DevMem;
use crate::runtime::context::Device;

/// A scatter plan on the device: the plan's positions and every level's chunk
/// tables, in one allocation of `u32`s.
#[derive(Debug)]
pub(crate) struct DevicePlan {
    mem: DevMem,
    /// The positions (level 0 values).
    pub positions: DevPtr<u32>,
    /// The destination row of every plan entry (the index list the plan was
    /// built from), for the segment ops' elementwise steps.
    pub rowof: DevPtr<u32>,
    /// Every level's chunk table.
    pub levels: Vec<ChunkTable>,
    /// Values each level reads (`values[0]` = entries; `values[l]` = scratch slots of level l).
    pub values: Vec<usize>,
    /// Level 0's window table (`levels::window_table`; null for a plan of
    /// no entries, which no kernel runs over).
    pub windows: DevPtr<u32>,
}

/// One level's chunk table on the device (crate `levels`): chunk `c` sums
/// the values from `start[c]` to `start[c + 1]` into row `row[c]`, or into
/// slot `slot[c]` of the next level's values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkTable {
    /// `chunks + 1` value offsets.
    pub start: DevPtr<u32>,
    /// The destination row of each chunk.
    pub row: DevPtr<u32>,
    /// The next level's slot of each chunk (or a row's end marker).
    pub slot: DevPtr<u32>,
    /// Number of chunks.
    pub chunks: u64,
}

impl DevicePlan {
    /// Uploads `plan` and its chunk tables.
    pub fn upload(dev: &Device, plan: &IndexPlan) -> BResult<DevicePlan> {
        let lv = build_levels(plan);
        let total = 2 * plan.len()
            + lv.levels
                .iter()
                .map(|l| l.start.len() + 2 * l.len())
                .sum::<usize>();
        let mut host: Vec<u32> = Vec::with_capacity(total);
        host.extend_from_slice(plan.positions());
        host.resize(2 * plan.len(), 0);
        {
            let rowof = &mut host[plan.len()..];
            for r in 0..plan.rows() {
                for &p in plan.row(r) {
                    rowof[p as usize] = r as u32;
                }
            }
        }
        let mut at = Vec::new();
        for l in &lv.levels {
            let s = host.len();
            host.extend_from_slice(&l.start);
            let r = host.len();
            host.extend_from_slice(&l.row);
            let o = host.len();
            host.extend_from_slice(&l.slot);
            at.push((s, r, o, l.len()));
        }
        let win = host.len();
        host.extend(
            lv.levels
                .first()
                .map_or(Vec::new(), |l| window_table(&l.start)),
        );
        let mem = dev.upload_bytes(u32_bytes(&host))?;
        let base: DevPtr<u32> = mem.ptr();
        let a = |i: usize| base.byte_add(4 * i as u64);
        Ok(DevicePlan {
            positions: base,
            rowof: a(plan.len()),
            levels: at
                .into_iter()
                .map(|(s, r, o, n)| ChunkTable {
                    start: a(s),
                    row: a(r),
                    slot: a(o),
                    chunks: n as u64,
                })
                .collect(),
            values: lv.values,
            windows: if lv.levels.is_empty() {
                DevPtr::NULL
            } else {
                a(win)
            },
            mem,
        })
    }

    /// A plan whose tables were written on the device into `mem`.
    pub fn from_parts(
        mem: DevMem,
        positions: DevPtr<u32>,
        rowof: DevPtr<u32>,
        levels: Vec<ChunkTable>,
        values: Vec<usize>,
        windows: DevPtr<u32>,
    ) -> DevicePlan {
        DevicePlan {
            mem,
            positions,
            rowof,
            levels,
            values,
            windows,
        }
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        self.mem.bytes()
    }
}

/// The bytes of a `u32` slice.
pub(crate) fn u32_bytes(v: &[u32]) -> &[u8] {
    // SAFETY: u32 has no padding and every byte is initialized; u8 has
    // alignment 1 and the length covers exactly the slice's bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}
