from hwinfo.entry import main

main()
