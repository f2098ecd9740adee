//! Trace tools: statistics (ANCS'10 Table 1), synthesis, merging (traffic aggregation), anonymization, rescaling, cutting.
