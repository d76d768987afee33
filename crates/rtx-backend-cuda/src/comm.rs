//! Data-parallel communication on CUDA devices: [`NcclComm`], a
//! [`Communicator`](rtx_backend::comm::Communicator) over NCCL (feature
//! `cuda`; NCCL loaded at run time). Without the feature the same names
//! exist and every constructor returns
//! [`CommError::Unavailable`](rtx_backend::comm::CommError::Unavailable).

#[cfg(feature = "cuda")]
pub use crate::backend::nccl::{Failures, NcclComm, NcclId, nccl_version};

#[cfg(not(feature = "cuda"))]
pub use off::{Failures, NcclComm, NcclId, nccl_version};

#[cfg(not(feature = "cuda"))]
mod off {
    use std::convert::Infallible;
    use std::time::Duration;

    use rtx_backend::comm::{AbortHandle, CommError, CommResult, Communicator};
    use rtx_backend::{BTensor, Element};

    use crate::CudaBackend;

    fn off() -> CommError {
        CommError::Unavailable(
            "rtx-backend-cuda was built without the `cuda` feature: rebuild with \
             `--features cuda` for NCCL"
                .into(),
        )
    }

    /// The NCCL version: always unavailable without the feature.
    ///
    /// # Errors
    /// [`CommError::Unavailable`].
    pub fn nccl_version() -> CommResult<i32> {
        Err(off())
    }

    /// NCCL's unique id (no value exists without the feature).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct NcclId {
        never: Infallible,
    }

    impl NcclId {
        /// A new id.
        ///
        /// # Errors
        /// [`CommError::Unavailable`].
        pub fn new() -> CommResult<NcclId> {
            Err(off())
        }

        /// An id from bytes.
        ///
        /// # Errors
        /// [`CommError::Unavailable`].
        pub fn from_bytes(_: &[u8]) -> CommResult<NcclId> {
            Err(off())
        }

        /// The bytes.
        pub fn as_bytes(&self) -> &[u8; 128] {
            match self.never {}
        }
    }

    /// Where the ranks of one process report failures to each other.
    #[derive(Debug, Clone, Default)]
    pub struct Failures;

    /// The NCCL communicator (no value exists without the feature).
    #[derive(Debug)]
    pub struct NcclComm {
        never: Infallible,
    }

    impl NcclComm {
        /// Joins a group.
        ///
        /// # Errors
        /// [`CommError::Unavailable`].
        pub fn new(
            _: &CudaBackend,
            _: &NcclId,
            _: usize,
            _: usize,
            _: Duration,
        ) -> CommResult<NcclComm> {
            Err(off())
        }

        /// Shares failures with the ranks of this process.
        pub fn share_failures(&mut self, _: &Failures) {
            match self.never {}
        }
    }

    impl Communicator<CudaBackend> for NcclComm {
        fn rank(&self) -> usize {
            match self.never {}
        }

        fn size(&self) -> usize {
            match self.never {}
        }

        fn all_gather<T: Element>(
            &mut self,
            _: &CudaBackend,
            _: &[&BTensor<CudaBackend, T>],
        ) -> CommResult<Vec<BTensor<CudaBackend, T>>> {
            match self.never {}
        }

        fn all_gather_u64(&mut self, _: &CudaBackend, _: u64) -> CommResult<Vec<u64>> {
            match self.never {}
        }

        fn abort(&self, _: &str) {
            match self.never {}
        }

        fn abort_handle(&self) -> AbortHandle {
            match self.never {}
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn without_the_feature_nccl_is_unavailable_and_says_why() {
            let e = super::NcclId::new().unwrap_err();
            assert!(e.to_string().contains("--features cuda"), "{e}");
            assert!(super::nccl_version().is_err());
        }
    }
}
