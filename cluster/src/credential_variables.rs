//! The names of the variables a cluster's credentials come in: its shared token and each
//! task's TLS files. A leaf, so that the errors naming them import nothing that reads them.

/// Name of the environment variable holding the cluster's shared token.
pub const CLUSTER_TOKEN: &str = "ESTIMATOR_CLUSTER_TOKEN";

/// Name of the environment variable naming a file that holds the cluster's shared token (a
/// mounted Kubernetes secret, say).
pub const CLUSTER_TOKEN_FILE: &str = "ESTIMATOR_CLUSTER_TOKEN_FILE";

/// Name of the environment variable naming this task's certificate (PEM; the chain, leaf
/// first).
pub const TLS_CERT: &str = "ESTIMATOR_TLS_CERT";

/// Name of the environment variable naming this task's private key (PEM).
pub const TLS_KEY: &str = "ESTIMATOR_TLS_KEY";

/// Name of the environment variable naming the CA certificate (PEM) that issued every
/// task's certificate: peers are trusted when theirs chains to it.
pub const TLS_CA: &str = "ESTIMATOR_TLS_CA";

/// Name of the optional environment variable giving the name every peer's certificate is
/// checked against; unset, a peer's certificate must name the host of its address.
pub const TLS_SERVER_NAME: &str = "ESTIMATOR_TLS_SERVER_NAME";
