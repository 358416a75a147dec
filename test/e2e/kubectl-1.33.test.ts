// The kubectl end-to-end scenario with kubectl 1.33 (installed beside the kubectl on PATH).
import { kubectlScenario } from './kubectl-scenario.js';

kubectlScenario('1.33');
