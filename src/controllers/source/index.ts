// Source clusters: kubeconfig Secrets, a client over a KubeConfig (src/kubeconfig/kubeconfig.ts), discovery, list+watch.
export { SourceClient, SourceError, toSourceError, type SourceErrorReason } from './client.js';
export { SourceConnector, type Connection, type SourceSpec } from './connector.js';
export { Discovery, collectionPath, type ResolvedType, type Resolution, type ResourceRule } from './discovery.js';
export { kubeconfigFromSecret, vetKubeconfig, type KubeConfigRefusalReason, type KubeConfigVerdict } from './kubeconfig.js';
export { Reflector, type ReflectorOptions, type StreamHandlers, type StreamState } from './reflector.js';
export { defaultSourceConfig, workspaceSourceConfig } from './default.js';
export { workspaceGitCredentials, type GitCredentialsOf } from './git-credentials.js';
export { SourceHub, SharedSource, sharedSources } from './sources.js';
export { SharedWatch, type Subscription } from './shared-watch.js';
export { TransportPool, sharedTransports, transportKey } from './transport.js';
