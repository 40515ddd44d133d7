module tfgang/bench/gowebhook

go 1.21
