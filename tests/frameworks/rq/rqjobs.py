def double(n):
    return n * 2

def boom():
    raise ValueError("always fails")
