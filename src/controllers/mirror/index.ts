// The mirror: GitTargets' source clusters, listed and watched, sanitized, into commit windows.
export { startMirror, statusFromReport, type MirrorController, type MirrorDeps } from './controller.js';
export { TargetMirror, identityKeyOf, type MirrorReport, type MirrorSpec, type PruneMode } from './target.js';
export { mergeStatus, readyCondition, writeMirrorStatus, type Condition, type MirrorStatus } from './status.js';
export { sanitizeObject } from './sanitize.js';
export { isClusterNoise, type NoiseResource } from './noise.js';
