from hwinfo.cli import main

main()
