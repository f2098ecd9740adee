//! Snort/Suricata content-rule subset: parse rules, prefilter with a multi-pattern automaton, verify the rest.
