// No configuration at all: what a user gets who skips the README's optimizeDeps advice.
export default {};
