//! [`Indices`]: the one index argument of every index and fused op.
//!
//! An op's indices come in one of three forms, all meaning the same list:
//! a host list (`&[u32]`), a host [`IndexPlan`] (the list stably sorted by
//! row, built once for a graph that stands still), or a list held by the
//! backend ([`IndexOps::Index`], e.g. device memory filled by a sampler).
//! Ops take `impl Into<Indices>`, so `&idx`, `&plan` and `&held` are
//! passed as they are. Where an op creates the tensor its entries address
//! (the segment ops, a scatter side of a fused op) it needs the row count:
//! a plan has it, a list says it with [`Indices::with_rows`].
//!
//! A backend resolves an `Indices` in one place: the host defaults through
//! [`Indices::host_list`] and [`Indices::host_plan`]; the CUDA backend to a
//! device list or plan (`rtx-backend-cuda`'s `device/indices/`).

use std::borrow::Cow;

use crate::index_list::HostIndex;
use crate::{Error, IndexOps, IndexPlan, Result, ops};

/// The indices of an index or fused op: the same list as a host list, a
/// host plan or a list the backend holds; ops take `impl Into<Indices>`.
/// Cheap to copy: it borrows.
pub enum Indices<'a, B: IndexOps + ?Sized> {
    /// A host list; `rows`, where given, the number of rows its entries
    /// address (each entry below it).
    List {
        /// The entries.
        list: &'a [u32],
        /// The rows they address, where the caller says.
        rows: Option<usize>,
    },
    /// A host plan: its entries and row count; `rows`, where given, must be
    /// the plan's own (an op refuses another).
    Plan {
        /// The plan.
        plan: &'a IndexPlan,
        /// The rows the caller says it addresses.
        rows: Option<usize>,
    },
    /// A list held by the backend; `rows` as for [`Indices::List`].
    Held {
        /// The backend list.
        list: &'a B::Index,
        /// The rows its entries address, where the caller says.
        rows: Option<usize>,
    },
}

impl<B: IndexOps + ?Sized> Clone for Indices<'_, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B: IndexOps + ?Sized> Copy for Indices<'_, B> {}

impl<B: IndexOps + ?Sized> std::fmt::Debug for Indices<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Indices::List { list, rows } => f
                .debug_struct("List")
                .field("len", &list.len())
                .field("rows", rows)
                .finish(),
            Indices::Plan { plan, rows } => f
                .debug_struct("Plan")
                .field("len", &plan.len())
                .field("plan_rows", &plan.rows())
                .field("rows", rows)
                .finish(),
            Indices::Held { list, rows } => f
                .debug_struct("Held")
                .field("list", list)
                .field("rows", rows)
                .finish(),
        }
    }
}

impl<'a, B: IndexOps + ?Sized> Indices<'a, B> {
    /// Whether `other` is the same borrow (the same host list, plan or
    /// backend list, by address) with the same rows: a caller listing
    /// lists to prepare can skip one it has.
    pub fn is_same(&self, other: &Self) -> bool {
        match (self, other) {
            (Indices::List { list: a, rows: r }, Indices::List { list: b, rows: s }) => {
                std::ptr::eq(*a, *b) && r == s
            }
            (Indices::Plan { plan: a, rows: r }, Indices::Plan { plan: b, rows: s }) => {
                std::ptr::eq(*a, *b) && r == s
            }
            (Indices::Held { list: a, rows: r }, Indices::Held { list: b, rows: s }) => {
                std::ptr::eq(*a, *b) && r == s
            }
            _ => false,
        }
    }

    /// A host list (`Indices::from(list)`); add its row count with
    /// [`Indices::with_rows`].
    pub fn list(list: &'a [u32]) -> Self {
        Indices::List { list, rows: None }
    }

    /// A host plan (`Indices::from(plan)`).
    pub fn plan(plan: &'a IndexPlan) -> Self {
        Indices::Plan { plan, rows: None }
    }

    /// A list held by the backend; add its row count with
    /// [`Indices::with_rows`]. (A concrete backend's lists also convert with
    /// `From`, e.g. `&CudaIndex`.)
    pub fn held(list: &'a B::Index) -> Self {
        Indices::Held { list, rows: None }
    }

    /// The same list, its entries addressing `rows` rows (for a plan, a
    /// count an op checks against the plan's own).
    #[must_use]
    pub fn with_rows(self, rows: usize) -> Self {
        let rows = Some(rows);
        match self {
            Indices::List { list, .. } => Indices::List { list, rows },
            Indices::Held { list, .. } => Indices::Held { list, rows },
            Indices::Plan { plan, .. } => Indices::Plan { plan, rows },
        }
    }

    /// Number of entries.
    pub fn len(&self, b: &B) -> usize {
        match self {
            Indices::List { list, .. } => list.len(),
            Indices::Plan { plan, .. } => plan.len(),
            Indices::Held { list, .. } => b.index_len(list),
        }
    }

    /// Whether there is no entry.
    pub fn is_empty(&self, b: &B) -> bool {
        self.len(b) == 0
    }

    /// The rows the entries address, where known.
    pub fn rows(&self) -> Option<usize> {
        match self {
            Indices::List { rows, .. } | Indices::Held { rows, .. } => *rows,
            Indices::Plan { plan, .. } => Some(plan.rows()),
        }
    }

    /// [`Error::ShapeMismatch`] for a plan said to address another row
    /// count than its own.
    fn check_said_rows(&self, op: &'static str) -> Result<()> {
        match *self {
            Indices::Plan {
                plan,
                rows: Some(r),
            } if r != plan.rows() => Err(Error::ShapeMismatch {
                op,
                detail: format!("a plan into {} rows, said to address {r}", plan.rows()),
            }),
            _ => Ok(()),
        }
    }

    /// The row count of an op whose tensor `what` has `rows` rows: `rows`,
    /// after checking that the indices, where they say, address as many.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] naming both counts.
    pub fn rows_of(&self, op: &'static str, what: &str, rows: usize) -> Result<usize> {
        self.check_said_rows(op)?;
        match self.rows() {
            Some(r) if r != rows => Err(Error::ShapeMismatch {
                op,
                detail: format!("indices into {r} rows, but {what} has {rows} rows"),
            }),
            _ => Ok(rows),
        }
    }

    /// The row count of an op that creates the tensor the entries address.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for a list that does not say it (pass a plan
    /// or [`Indices::with_rows`]).
    pub fn needed_rows(&self, op: &'static str) -> Result<usize> {
        self.check_said_rows(op)?;
        self.rows().ok_or_else(|| Error::ShapeMismatch {
            op,
            detail: "an index list without a row count: pass a plan, or the list \
                     `.with_rows(rows)` (Indices::with_rows)"
                .into(),
        })
    }

    /// The entries on the host, in list order (borrowed where they are; a
    /// plan's recovered from its rows).
    ///
    /// # Errors
    /// The backend's, downloading a held list.
    pub fn host_list<'s>(&self, b: &'s B) -> Result<Cow<'s, [u32]>>
    where
        'a: 's,
    {
        Ok(match *self {
            Indices::List { list, .. } => Cow::Borrowed(list),
            Indices::Plan { plan, .. } => Cow::Owned(ops::plan_indices(plan)),
            Indices::Held { list, .. } => b.index_to_host(list)?,
        })
    }

    /// The host plan into `rows` rows (borrowed for a plan, built for a
    /// list: [`IndexPlan::new`], which checks every entry).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for indices of another row count; as
    /// [`IndexPlan::new`].
    pub fn host_plan<'s>(
        &self,
        b: &'s B,
        op: &'static str,
        rows: usize,
    ) -> Result<Cow<'s, IndexPlan>>
    where
        'a: 's,
    {
        self.rows_of(op, "the output", rows)?;
        match *self {
            Indices::Plan { plan, .. } => Ok(Cow::Borrowed(plan)),
            _ => Ok(Cow::Owned(IndexPlan::new(&self.host_list(b)?, rows)?)),
        }
    }

    /// The host plan of a segment op over `x` (`[E, f]` for `E` entries) and
    /// `f`: its row count ([`Indices::needed_rows`]), `x`'s shape, then the
    /// plan ([`Indices::host_plan`]), checked in that order.
    ///
    /// # Errors
    /// As those, and [`ops::check_segment_len`].
    pub fn segment_plan<'s>(
        &self,
        b: &'s B,
        op: &'static str,
        x: &[usize],
    ) -> Result<(Cow<'s, IndexPlan>, usize)>
    where
        'a: 's,
    {
        let rows = self.needed_rows(op)?;
        let (_, f) = ops::check_segment_len(op, x, self.len(b), rows)?;
        Ok((self.host_plan(b, op, rows)?, f))
    }
}

impl<'a, B: IndexOps + ?Sized> From<&'a [u32]> for Indices<'a, B> {
    fn from(list: &'a [u32]) -> Self {
        Indices::List { list, rows: None }
    }
}

impl<'a, B: IndexOps + ?Sized> From<&'a Vec<u32>> for Indices<'a, B> {
    fn from(list: &'a Vec<u32>) -> Self {
        Indices::List { list, rows: None }
    }
}

impl<'a, const N: usize, B: IndexOps + ?Sized> From<&'a [u32; N]> for Indices<'a, B> {
    fn from(list: &'a [u32; N]) -> Self {
        Indices::List { list, rows: None }
    }
}

impl<'a, B: IndexOps + ?Sized> From<&'a IndexPlan> for Indices<'a, B> {
    fn from(plan: &'a IndexPlan) -> Self {
        Indices::plan(plan)
    }
}

impl<'a, B: IndexOps<Index = HostIndex> + ?Sized> From<&'a HostIndex> for Indices<'a, B> {
    fn from(list: &'a HostIndex) -> Self {
        Indices::Held { list, rows: None }
    }
}
