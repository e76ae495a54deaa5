# Builds web/ with npm (Vite) and embeds web/dist into the program, so the
# binary alone serves the page. With RETRYSTORM_WEB=OFF a stub page is used.
set(WEB_ASSETS_CPP ${CMAKE_BINARY_DIR}/generated/web_assets.cpp)
if(RETRYSTORM_WEB)
  file(GLOB_RECURSE WEB_INPUTS CONFIGURE_DEPENDS
       ${CMAKE_SOURCE_DIR}/web/src/* ${CMAKE_SOURCE_DIR}/web/index.html
       ${CMAKE_SOURCE_DIR}/web/package.json ${CMAKE_SOURCE_DIR}/web/vite.config.*)
  add_custom_command(
    OUTPUT ${WEB_ASSETS_CPP}
    COMMAND npm run build --silent
    COMMAND ${CMAKE_COMMAND} -DOUT=${WEB_ASSETS_CPP} -DDIR=${CMAKE_SOURCE_DIR}/web/dist
            -P ${CMAKE_SOURCE_DIR}/cmake/embed_dir.cmake
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}/web
    DEPENDS ${WEB_INPUTS} ${CMAKE_SOURCE_DIR}/cmake/embed_dir.cmake
    COMMENT "Building the web page (npm run build) and embedding it"
    VERBATIM)
else()
  add_custom_command(
    OUTPUT ${WEB_ASSETS_CPP}
    COMMAND ${CMAKE_COMMAND} -DOUT=${WEB_ASSETS_CPP} -DDIR= -P
            ${CMAKE_SOURCE_DIR}/cmake/embed_dir.cmake
    DEPENDS ${CMAKE_SOURCE_DIR}/cmake/embed_dir.cmake
    COMMENT "Embedding no web page (RETRYSTORM_WEB=OFF)"
    VERBATIM)
endif()
