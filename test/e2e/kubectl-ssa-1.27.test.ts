// kubectl 1.27 server-side apply end to end.
import { kubectlSSAScenario } from './kubectl-ssa-scenario.js';

kubectlSSAScenario('1.27');
