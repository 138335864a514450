//! Typed errors. Normalization itself never fails (every ending becomes an envelope); only
//! the retained-result store can refuse.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StoreError {
    #[error("no retained result under this handle")]
    NotFound,
    /// Distinct from `NotFound` so a gateway can log cross-identity probing; the caller
    /// still learns nothing about the content.
    #[error("the retained result belongs to another identity")]
    NotOwner,
    #[error("the retained result expired")]
    Expired,
    #[error("item of {size} bytes exceeds the store cap of {cap} bytes")]
    TooLarge { size: usize, cap: usize },
    #[error("store lock poisoned")]
    Poisoned,
}
