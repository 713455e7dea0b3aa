//! The UCX transport (cdt_ucx.h).
