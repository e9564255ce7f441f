module gomix

go 1.19
