"""The profile schema lives in sim (kvlab.sim.profile_schema, standard library only), so sim's loader
and the calibration suite apply one rule; this module re-exports it for the suite."""

from kvlab.sim.profile_schema import (  # noqa: F401
    CPU_CHECK_PREFIX,
    GEMM_DTYPES,
    KNOWN_GPU_IDS,
    MEASURED_PROVENANCE,
    MEASURED_V2_PROVENANCE,
    OPTIONAL_FIELDS,
    PROVENANCE_KINDS,
    REQUIRED_FIELDS,
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    V2_FIELDS,
    validate_profile,
)
