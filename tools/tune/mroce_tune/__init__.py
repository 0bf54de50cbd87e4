"""mroce-tune modules: fabric, derive, emit, verify, diagnose, cli."""
