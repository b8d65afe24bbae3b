// No configuration at all: what a user gets who skips docs/api.md's optimizeDeps advice.
export default {};
