"""Cross-checks against implementations that are not the project's own (Go's x/mod sumdb
packages), so a shared misreading of a specification cannot pass unnoticed."""
