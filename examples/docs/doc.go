// Package docs holds the test that runs the shell blocks of README.md and
// docs/*.md as a reader would: every ```sh block is either run, on a fresh
// data folder and then again on the same one, or listed with the reason
// it is not, which the doc says beside the block. docs/MCP.md's blocks are
// run by examples/server's TestMCPDocCommands.
package docs
