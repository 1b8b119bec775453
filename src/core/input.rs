//! Placeholder replaced by the input-normalisation module.
