// The server's own commit identity when none is configured. Its own module (no isomorphic-git
// import) so the CLI can show the defaults in --help without loading the git engine.
export const DEFAULT_COMMITTER_NAME = 'reverser-apiserver';
export const DEFAULT_COMMITTER_EMAIL = 'reverser-apiserver@localhost';
