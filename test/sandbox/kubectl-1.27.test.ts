// kubectl 1.27 against the sandbox (OpenAPI v2 as protobuf, older typed clients).
import { sandboxKubectlScenario } from './kubectl-scenario.js';

sandboxKubectlScenario('1.27');
