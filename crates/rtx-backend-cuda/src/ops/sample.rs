//! [`SampleOps`] on the device (kernels/sample.cu): a relation's CSR from its
//! edge lists by the device plan's stable sort, and the neighbour sampler of
//! `rtx_backend::sample`, bit for bit the host reference. Neither the
//! topology nor a sample crosses to the host: a sample waits once for the
//! seeds' count of distinct nodes and twice a hop, for every relation's edge
//! total of the hop, then for every node type's count of new nodes: the
//! sizes its allocations and the next hop's launches need.

use rtx_backend::sample::{Csr, SampleHops, SampleSpec, Sampled, check_spec, sample_key};
use rtx_backend::{Error as BError, Result as BResult, SampleOps};

use crate::backend::CudaBackend;
use crate::error::{Error, Result};
use crate::indices::build::scan_u32;
use crate::indices::layout::tiles;
use crate::indices::lists::{CudaIndex, copy_parts};
use crate::indices::sorted::Sorted;
use crate::indices::{Largest, ListEntry};
use crate::kernels::table::Kernel;
use crate::runtime::args::{DevPtr, In, Out};
use crate::runtime::buffer::DevMem;
use crate::runtime::context::Device;
use crate::runtime::launch::{
    GatherU32, PlanOffsets, RelabelApply, RelabelAssign, RelabelClaim, RelabelFlag, SampleCount,
    SamplePick, cfg1, grid_for,
};

/// A list of `u32`s on the device and its length.
type Chunk = (DevMem, usize);

/// A hop's frontier of one node type: its nodes (a copy when they span
/// chunks), their address, count and first local id.
type Frontier = (Option<DevMem>, DevPtr<u32>, usize, usize);

/// `n` `u32`s of fresh device memory.
fn alloc_u32(dev: &Device, n: usize) -> Result<DevMem> {
    let bytes = n.checked_mul(4).ok_or(Error::SizeOverflow {
        what: "sampler buffer",
        count: n,
        size: 4,
    })?;
    dev.alloc(bytes)
}

/// The `u32` at each of `at`, read with one wait (none for no address).
fn read_words(dev: &Device, at: &[DevPtr<u32>], what: &str) -> Result<Vec<u32>> {
    let mut words = vec![[0u32]; at.len()];
    if !at.is_empty() {
        let mut parts: Vec<(DevPtr<u32>, &mut [u32])> = at
            .iter()
            .copied()
            .zip(words.iter_mut().map(|w| &mut w[..]))
            .collect();
        dev.read_each(&mut parts, what)?;
    }
    Ok(words.into_iter().map(|[w]| w).collect())
}

/// The largest position the relabelling encodes (see kernels/sample.cu).
const MAX_CANDIDATES: usize = (1 << 31) - 2;

/// A relabelling queued on the stream and not yet read: the new nodes'
/// buffer (room for every candidate) and the scan whose last entry is their
/// count.
struct Relabelled {
    fresh: DevMem,
    pos: DevMem,
    m: usize,
}

impl Relabelled {
    /// Where the count of new nodes will be.
    fn count_at(&self) -> DevPtr<u32> {
        self.pos.ptr::<u32>().byte_add(4 * self.m as u64)
    }
}

/// Refuses a relabelling of more candidates than the encoding holds.
fn check_candidates(m: usize) -> BResult<()> {
    if m > MAX_CANDIDATES {
        return Err(BError::Sample(format!(
            "{m} sampled nodes in one relabelling; the sampler takes at most {MAX_CANDIDATES}"
        )));
    }
    Ok(())
}

impl CudaBackend {
    /// Queues the numbering of the `m` global ids of type `t` at `cand`
    /// against the type's map (nodes assigned before keep their ids; new
    /// ones get `base..` in order of first position, listed in the returned
    /// buffer). Nothing is read back: the count of new nodes is at
    /// [`Relabelled::count_at`], for the caller to read with others.
    fn relabel(
        &self,
        map: DevPtr<u32>,
        cand: DevPtr<u32>,
        m: usize,
        base: usize,
    ) -> BResult<Relabelled> {
        check_candidates(m)?;
        let dev = &self.dev;
        let k = dev.kernels()?;
        let m64 = m as u64;
        let args = RelabelClaim {
            cand: In::at(cand),
            m: m64,
            map: Out::at(map),
        };
        // SAFETY: cand holds m ids, each below the map's node count
        // (neighbours of a CSR built by csr_by_dst, or range-checked seeds).
        unsafe { args.launch(dev, &k, Kernel::RelabelClaim, cfg1(grid_for(m64))) }?;
        let flags = alloc_u32(dev, m + 1)?;
        let args = RelabelFlag {
            cand: In::at(cand),
            m: m64,
            map: In::at(map),
            flags: Out::at(flags.ptr()),
        };
        // SAFETY: as above for cand and map; flags holds m + 1 u32.
        unsafe { args.launch(dev, &k, Kernel::RelabelFlag, cfg1(grid_for(m64 + 1))) }?;
        let pos = alloc_u32(dev, m + 1)?;
        let sums = alloc_u32(dev, tiles(m64 + 1) as usize)?;
        scan_u32(dev, flags.ptr(), m64 + 1, sums.ptr(), pos.ptr())?;
        let fresh = alloc_u32(dev, m)?;
        let args = RelabelAssign {
            cand: In::at(cand),
            m: m64,
            flags: In::at(flags.ptr()),
            pos: In::at(pos.ptr()),
            base: base as u64,
            map: Out::at(map),
            fresh: Out::at(fresh.ptr()),
        };
        // SAFETY: as above for cand and map; pos is the exclusive scan of the
        // m flags, so flagged positions write distinct slots below their
        // count, at most m, fresh's length.
        unsafe { args.launch(dev, &k, Kernel::RelabelAssign, cfg1(grid_for(m64))) }?;
        Ok(Relabelled { fresh, pos, m })
    }

    /// The local ids of the `m` global ids at `cand`, every one assigned in
    /// `map` by a relabelling queued before.
    fn relabel_apply(&self, map: DevPtr<u32>, cand: DevPtr<u32>, m: usize) -> BResult<Chunk> {
        let dev = &self.dev;
        let k = dev.kernels()?;
        let local = alloc_u32(dev, m)?;
        let args = RelabelApply {
            cand: In::at(cand),
            m: m as u64,
            map: In::at(map),
            local: Out::at(local.ptr()),
        };
        // SAFETY: cand holds m ids below the map's node count, each assigned
        // by the relabelling queued before; local holds m u32.
        unsafe { args.launch(dev, &k, Kernel::RelabelApply, cfg1(grid_for(m as u64))) }?;
        Ok((local, m))
    }

    /// The new nodes of each relabelling, read with one wait.
    fn relabel_counts(&self, done: Vec<Relabelled>) -> BResult<Vec<Chunk>> {
        let at: Vec<DevPtr<u32>> = done.iter().map(Relabelled::count_at).collect();
        let counts = read_words(&self.dev, &at, "reading a sample's node counts back")?;
        Ok(done
            .into_iter()
            .zip(counts)
            .map(|(r, n)| (r.fresh, n as usize))
            .collect())
    }

    /// The chunks one after another in one new allocation.
    fn concat(&self, chunks: &[Chunk]) -> BResult<DevMem> {
        let n: usize = chunks.iter().map(|c| c.1).sum();
        let out = alloc_u32(&self.dev, n)?;
        let parts: Vec<(DevPtr<u32>, u64, u32)> = chunks
            .iter()
            .map(|(c, len)| (c.ptr(), *len as u64, 0))
            .collect();
        copy_parts(&self.dev, &parts, out.ptr())?;
        Ok(out)
    }

    /// The chunks one after another as one device list (no copy for one),
    /// every entry below `below` (node ids below their type's count, local
    /// ids below the sample's count of the type: the sampler's kernels write
    /// no other), so a gather by it needs no range check.
    fn join(&self, mut chunks: Vec<Chunk>, below: usize, sorted: bool) -> BResult<CudaIndex> {
        let n: usize = chunks.iter().map(|c| c.1).sum();
        let mem = match chunks.len() {
            1 => chunks.swap_remove(0).0,
            _ => self.concat(&chunks)?,
        };
        Ok(self.wrap(listed(mem, n, below, sorted)))
    }

    /// The lists of one relation's first `k` hops for `k` in `1..=hops`
    /// (the last: every hop's): `ends[k - 1]` of the `chunks` (one per hop
    /// that picked any, in hop order) make the first `k` hops, entries below
    /// `below[k - 1]`. A list of more than one chunk is a copy; the lists
    /// of exactly the first chunk share it, with the smallest of their
    /// bounds (which holds for the others). `sorted`: the chunks are the
    /// destinations, sorted ([`listed`]).
    fn join_hops(
        &self,
        mut chunks: Vec<Chunk>,
        ends: &[usize],
        below: &[usize],
        sorted: bool,
    ) -> BResult<Vec<CudaIndex>> {
        let mut lists: Vec<Option<CudaIndex>> = ends
            .iter()
            .zip(below)
            .map(|(&c, &b)| match c {
                0 => Ok(Some(self.join(Vec::new(), b, sorted)?)),
                1 => Ok(None),
                _ => {
                    let n = chunks[..c].iter().map(|c| c.1).sum();
                    let mem = self.concat(&chunks[..c])?;
                    Ok(Some(self.wrap(listed(mem, n, b, sorted))))
                }
            })
            .collect::<BResult<_>>()?;
        if let Some(k) = ends.iter().position(|&c| c == 1) {
            let first = self.join(vec![chunks.swap_remove(0)], below[k], sorted)?;
            for (l, _) in lists.iter_mut().zip(ends).filter(|(_, c)| **c == 1) {
                *l = Some(first.clone());
            }
        }
        Ok(lists
            .into_iter()
            .map(|l| l.expect("every list made"))
            .collect())
    }

    /// Queues the count of one hop through relation `c` for the `n`
    /// frontier nodes at `front`: each node's `min(degree, fanout)` and
    /// their exclusive scan, `n + 1` u32 whose last is the hop's edge total
    /// (read back by the caller, with the other relations' of the hop).
    fn hop_count(
        &self,
        c: &Csr<CudaIndex>,
        front: DevPtr<u32>,
        n: usize,
        fanout: u32,
    ) -> BResult<DevMem> {
        let dev = &self.dev;
        let k = dev.kernels()?;
        let off = c.offsets().entry.dev_list(dev)?;
        let n64 = n as u64;
        let counts = alloc_u32(dev, n + 1)?;
        let args = SampleCount {
            off: In::at(off),
            front: In::at(front),
            n: n64,
            fanout,
            counts: Out::at(counts.ptr()),
        };
        // SAFETY: front holds n node ids below the CSR's dst_nodes, off
        // dst_nodes + 1 offsets, counts n + 1 u32.
        unsafe { args.launch(dev, &k, Kernel::SampleCount, cfg1(grid_for(n64 + 1))) }?;
        let eoff = alloc_u32(dev, n + 1)?;
        let sums = alloc_u32(dev, tiles(n64 + 1) as usize)?;
        scan_u32(dev, counts.ptr(), n64 + 1, sums.ptr(), eoff.ptr())?;
        Ok(eoff)
    }

    /// The `m > 0` picks of one hop through relation `c` for the `n`
    /// frontier nodes at `front` (local ids from `lo`), placed by `eoff`
    /// ([`CudaBackend::hop_count`]'s scan, whose total is `m`): their global
    /// ids, written to the `m` u32 at `cand`, and their local destinations.
    #[allow(clippy::too_many_arguments)]
    fn hop_pick(
        &self,
        c: &Csr<CudaIndex>,
        (front, n, lo): (DevPtr<u32>, usize, usize),
        fanout: u32,
        key: u64,
        eoff: &DevMem,
        m: usize,
        cand: DevPtr<u32>,
    ) -> BResult<Chunk> {
        let dev = &self.dev;
        let k = dev.kernels()?;
        let off = c.offsets().entry.dev_list(dev)?;
        let nbr = c.neighbors().entry.dev_list(dev)?;
        let n64 = n as u64;
        let dstl = alloc_u32(dev, m)?;
        let args = SamplePick {
            off: In::at(off),
            nbr: In::at(nbr),
            front: In::at(front),
            n: n64,
            lo: lo as u64,
            fanout,
            key,
            eoff: In::at(eoff.ptr()),
            cand: Out::at(cand),
            dstl: Out::at(dstl.ptr()),
        };
        // SAFETY: front holds n node ids below the CSR's dst_nodes, off
        // dst_nodes + 1 offsets; eoff is the exclusive scan of each node's
        // min(degree, fanout), so node i writes slots eoff[i].. of its own,
        // all below m, the length of dstl and of the caller's room at cand;
        // the CSR's offsets bound every neighbour read.
        unsafe { args.launch(dev, &k, Kernel::SamplePick, cfg1(grid_for(n64))) }?;
        Ok((dstl, m))
    }
}

impl SampleOps for CudaBackend {
    fn beside(&self) -> BResult<Option<Self>> {
        Ok(Some(CudaBackend::beside(self)?))
    }

    fn wait_for(&self, other: &Self) -> BResult<()> {
        Ok(CudaBackend::wait_for(self, other)?)
    }

    fn csr_by_dst(
        &self,
        src: &CudaIndex,
        dst: &CudaIndex,
        (src_type, src_nodes): (usize, usize),
        (dst_type, dst_nodes): (usize, usize),
    ) -> BResult<Csr<CudaIndex>> {
        self.check_own(src)?;
        self.check_own(dst)?;
        let n = src.len();
        if n != dst.len() {
            return Err(BError::ShapeMismatch {
                op: "csr_by_dst",
                detail: format!("{n} sources but {} destinations", dst.len()),
            });
        }
        let dev = &self.dev;
        src.entry.check_below(dev, src_nodes)?;
        let src_max = src.entry.largest(dev)?;
        let offsets = alloc_u32(dev, dst_nodes + 1)?;
        let nbrs = alloc_u32(dev, n)?;
        if n == 0 {
            dev.zero(&offsets)?;
        } else {
            let plan = dst.entry.plan(dev, dst_nodes)?;
            let k = dev.kernels()?;
            let keys = alloc_u32(dev, n)?;
            let (n64, rows) = (n as u64, dst_nodes as u64);
            let (sp, dp, pos) = (
                src.entry.dev_list(dev)?,
                dst.entry.dev_list(dev)?,
                plan.positions,
            );
            let (kp, op, np) = (keys.ptr(), offsets.ptr(), nbrs.ptr());
            for (from, to) in [(dp, kp), (sp, np)] {
                let args = GatherU32 {
                    src: In::at(from),
                    idx: In::at(pos),
                    n: n64,
                    out: Out::at(to),
                };
                // SAFETY: the plan's positions are a permutation of 0..n, both
                // lists hold n u32 and so does the output.
                unsafe { args.launch(dev, &k, Kernel::GatherU32, cfg1(grid_for(n64))) }?;
            }
            let args = PlanOffsets {
                skeys: In::at(kp),
                n: n64,
                rows,
                off: Out::at(op),
                iota: Out::at(DevPtr::NULL),
            };
            // SAFETY: the keys are sorted (the destinations in plan order) and
            // hold n u32, off holds rows + 1 u32.
            unsafe { args.launch(dev, &k, Kernel::PlanOffsets, cfg1(grid_for(rows + 1))) }?;
        }
        let last = u32::try_from(n).map_err(|_| BError::TooManyIndices {
            len: n,
            max: u32::MAX as usize,
        })?;
        Ok(Csr::from_parts(
            (src_type, src_nodes),
            (dst_type, dst_nodes),
            self.wrap(ListEntry::from_device(
                offsets,
                dst_nodes + 1,
                Some(Largest::Is(last)),
            )),
            self.wrap(ListEntry::from_device(nbrs, n, Some(src_max))),
        ))
    }

    fn sample_neighbors(
        &self,
        node_counts: &[usize],
        relations: &[Csr<CudaIndex>],
        seeds: &CudaIndex,
        spec: &SampleSpec,
    ) -> BResult<Sampled<CudaIndex>> {
        check_spec(node_counts, relations, seeds.len(), spec)?;
        self.check_own(seeds)?;
        for c in relations {
            self.check_own(c.offsets())?;
            self.check_own(c.neighbors())?;
        }
        let dev = &self.dev;
        let types = node_counts.len();
        let t0 = spec.seed_type;
        seeds.entry.check_below(dev, node_counts[t0])?;
        // per type: the map of global ids to local ones, zeroed at first use
        let mut maps: Vec<Option<DevMem>> = (0..types).map(|_| None).collect();
        let mut map_of = |t: usize| -> BResult<DevPtr<u32>> {
            if let Some(m) = &maps[t] {
                return Ok(m.ptr());
            }
            let m = alloc_u32(dev, node_counts[t])?;
            dev.zero(&m)?;
            let p = m.ptr();
            maps[t] = Some(m);
            Ok(p)
        };
        let mut nodes: Vec<Vec<Chunk>> = (0..types).map(|_| Vec::new()).collect();
        let mut count = vec![0usize; types];
        let seed_map = map_of(t0)?;
        let seed_list = seeds.entry.dev_list(dev)?;
        let queued = self.relabel(seed_map, seed_list, seeds.len(), 0)?;
        let seed_local = self.relabel_apply(seed_map, seed_list, seeds.len())?;
        let fresh = self.relabel_counts(vec![queued])?.swap_remove(0);
        count[t0] = fresh.1;
        nodes[t0].push(fresh);
        let mut frontier: Vec<Option<Frontier>> = (0..types).map(|_| None).collect();
        frontier[t0] = Some((None, nodes[t0][0].0.ptr(), count[t0], 0));
        let mut src: Vec<Vec<Chunk>> = (0..relations.len()).map(|_| Vec::new()).collect();
        let mut dst: Vec<Vec<Chunk>> = (0..relations.len()).map(|_| Vec::new()).collect();
        // per hop, every type's count of nodes reached so far, and every
        // relation's count of chunks so far
        let mut reached = vec![count.clone()];
        let mut chunk_ends: Vec<Vec<usize>> = Vec::with_capacity(spec.fanouts.len());
        for fan in &spec.fanouts {
            let before = count.clone();
            let chunks_before: Vec<usize> = nodes.iter().map(Vec::len).collect();
            // every relation's count of this hop queued, their edge totals
            // read with one wait (the frontier is fixed for the hop, so the
            // picks do not depend on the relabellings)
            let mut counted = Vec::new();
            for (r, c) in relations.iter().enumerate() {
                let Some((_, fp, n, lo)) = frontier[c.dst_type()] else {
                    continue;
                };
                if fan[r] == 0 {
                    continue;
                }
                let eoff = self.hop_count(c, fp, n, fan[r])?;
                counted.push((r, (fp, n, lo), eoff));
            }
            let ends: Vec<DevPtr<u32>> = counted
                .iter()
                .map(|(_, (_, n, _), eoff)| eoff.ptr::<u32>().byte_add(4 * *n as u64))
                .collect();
            let totals = read_words(dev, &ends, "reading a hop's edge counts back")?;
            // each source type's picks of the hop one after another, in
            // relation order, and relabelled at once: the same numbering as
            // one relabelling a relation in that order (a node's first
            // position is in the first relation that picks it)
            let mut room = vec![0usize; types];
            for ((r, _, _), &m) in counted.iter().zip(&totals) {
                room[relations[*r].src_type()] += m as usize;
            }
            // (an empty buffer for a type no relation picks)
            let cands = room
                .iter()
                .map(|&m| {
                    check_candidates(m)?;
                    Ok(alloc_u32(dev, m)?)
                })
                .collect::<BResult<Vec<DevMem>>>()?;
            let mut at = vec![0usize; types];
            let mut placed = Vec::with_capacity(counted.len());
            for ((r, front, eoff), &m) in counted.iter().zip(&totals) {
                let (r, m) = (*r, m as usize);
                if m == 0 {
                    continue;
                }
                let c = &relations[r];
                let st = c.src_type();
                let cand = cands[st].ptr::<u32>().byte_add(4 * at[st] as u64);
                let key = sample_key(spec.seed, spec.step, r);
                dst[r].push(self.hop_pick(c, *front, fan[r], key, eoff, m, cand)?);
                placed.push((r, cand, m));
                at[st] += m;
            }
            let mut queued = Vec::new();
            let mut queued_types = Vec::new();
            for t in (0..types).filter(|&t| room[t] > 0) {
                queued.push(self.relabel(map_of(t)?, cands[t].ptr(), room[t], count[t])?);
                queued_types.push(t);
            }
            for (r, cand, m) in placed {
                let st = relations[r].src_type();
                src[r].push(self.relabel_apply(map_of(st)?, cand, m)?);
            }
            // every type's count of new nodes with one wait
            for (t, fresh) in queued_types.into_iter().zip(self.relabel_counts(queued)?) {
                count[t] += fresh.1;
                if fresh.1 > 0 {
                    nodes[t].push(fresh);
                }
            }
            for t in 0..types {
                let added = &nodes[t][chunks_before[t]..];
                frontier[t] = match added {
                    [] => None,
                    [one] => Some((None, one.0.ptr(), one.1, before[t])),
                    _ => {
                        let mem = self.concat(added)?;
                        let p = mem.ptr();
                        Some((Some(mem), p, count[t] - before[t], before[t]))
                    }
                };
            }
            reached.push(count.clone());
            chunk_ends.push(src.iter().map(Vec::len).collect());
        }
        drop(frontier);
        // each list with the count its entries are below: a relation's
        // sources of its first k hops are nodes reached by hop k, its
        // destinations nodes reached by hop k - 1 (a hop's frontier)
        let hops = spec.fanouts.len();
        let mut within = Vec::with_capacity(relations.len());
        let (mut src_all, mut dst_all) = (Vec::new(), Vec::new());
        for (r, (s, d)) in src.into_iter().zip(dst).enumerate() {
            let (st, dt) = (relations[r].src_type(), relations[r].dst_type());
            let ends: Vec<usize> = chunk_ends.iter().map(|e| e[r]).collect();
            let below = |t: usize, by: usize| -> Vec<usize> {
                (by..by + hops).map(|h| reached[h][t]).collect()
            };
            let mut s = self.join_hops(s, &ends, &below(st, 1), false)?;
            let mut d = self.join_hops(d, &ends, &below(dt, 0), true)?;
            src_all.push(s.pop().expect("hops >= 1"));
            dst_all.push(d.pop().expect("hops >= 1"));
            within.push(s.into_iter().zip(d).collect());
        }
        let nodes = nodes
            .into_iter()
            .enumerate()
            .map(|(t, c)| self.join(c, node_counts[t], false))
            .collect::<BResult<Vec<_>>>()?;
        Ok(Sampled {
            nodes,
            src: src_all,
            dst: dst_all,
            seeds: self.join(vec![seed_local], reached[0][t0], false)?,
            counts: count,
            hops: Some(SampleHops { reached, within }),
        })
    }
}

/// A sampler's list of `n` entries in `mem`, every one below `below`;
/// `sorted`: non-decreasing too. A relation's destinations are: hop `h`'s
/// picks of frontier node `i` (local id `lo + i`) are written in node order
/// (`sample_pick`), and each hop's frontier takes local ids above the
/// hops' before it, so its scatter plan skips the sort.
fn listed(mem: DevMem, n: usize, below: usize, sorted: bool) -> ListEntry {
    let order = match (sorted, below.checked_sub(1).map(u32::try_from)) {
        (true, Some(Ok(hi))) => Some(Sorted { lo: 0, hi }),
        _ => None,
    };
    ListEntry::from_device_below(mem, n, below).sorted_as(order)
}
