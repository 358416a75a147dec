// kubectl 1.33 against the sandbox.
import { sandboxKubectlScenario } from './kubectl-scenario.js';

sandboxKubectlScenario('1.33');
