// kubectl (the one on PATH) against the sandbox.
import { sandboxKubectlScenario } from './kubectl-scenario.js';

sandboxKubectlScenario(undefined);
