// The kubectl end-to-end scenario with the kubectl on PATH.
import { kubectlScenario } from './kubectl-scenario.js';

kubectlScenario(undefined);
