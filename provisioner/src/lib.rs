//! The provisioner: provider clients, provision workflow, nodes, join tokens, enrollment, CA.
