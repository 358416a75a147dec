// kubectl (PATH) server-side apply end to end.
import { kubectlSSAScenario } from './kubectl-ssa-scenario.js';

kubectlSSAScenario(undefined);
