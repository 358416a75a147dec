export { APIServiceRegistrar, APISERVICE_NAME, REGISTRATION_STATES } from './apiservice.js';
export type { RegistrationClient, RegistrationState } from './apiservice.js';
export { REGISTRATION_FLAGS, parseRegistrationFlags, RegistrationFlagError, caFileBesideCert } from './options.js';
export type { RegistrationOptions } from './options.js';
