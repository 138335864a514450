//! The reference gateway (being built).
