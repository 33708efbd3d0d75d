module 0orcr/fast

go 1.26.8
