// kubectl 1.33 server-side apply end to end.
import { kubectlSSAScenario } from './kubectl-ssa-scenario.js';

kubectlSSAScenario('1.33');
